package signal

import (
	"encoding/json"
	"fmt"
)

// Encode marshals body as a message of type typ: the body's fields plus "type".
// body must encode as a JSON object; nil (or a nil pointer) is an empty body;
// a Prepared body of the same type is its frame, shared.
func Encode(typ string, body any) ([]byte, error) {
	if p, ok := body.(Prepared); ok && p.typ == typ {
		return p.frame, nil
	}
	if a, ok := body.(fieldsAppender); ok && plainJSON(typ) {
		out := append(make([]byte, 0, a.sizeHint()), `{"type":"`...)
		out = append(append(out, typ...), `",`...)
		if out, ok := a.appendFields(out); ok {
			return append(out, '}'), nil
		}
	}
	fields, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	head := `{"type":` + quote(typ)
	if string(fields) == "null" || string(fields) == "{}" {
		return []byte(head + "}"), nil
	}
	if len(fields) < 2 || fields[0] != '{' {
		return nil, fmt.Errorf("encode %s: body %T is not a JSON object", typ, body)
	}
	out := make([]byte, 0, len(head)+len(fields))
	out = append(out, head...)
	out = append(out, ',')
	return append(out, fields[1:]...), nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Prepared is a message encoded once, to be sent as it is to many receivers:
// Encode returns its frame for its own type without marshalling again.
type Prepared struct {
	typ   string
	frame []byte
}

// Prepare encodes body as a message of type typ once.
func Prepare(typ string, body any) (Prepared, error) {
	frame, err := Encode(typ, body)
	return Prepared{typ: typ, frame: frame}, err
}

// MarshalJSON is the encoded frame (with its "type").
func (p Prepared) MarshalJSON() ([]byte, error) { return p.frame, nil }

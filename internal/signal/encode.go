package signal

import (
	"encoding/json"
	"fmt"
)

// Encode marshals body as a message of type typ: the body's fields plus "type".
// body must encode as a JSON object; nil (or a nil pointer) is an empty body.
func Encode(typ string, body any) ([]byte, error) {
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

package signal

import "encoding/json"

// Encode marshals body as a message of type typ: the body's fields plus "type".
func Encode(typ string, body any) ([]byte, error) {
	fields, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	head := `{"type":` + quote(typ)
	if len(fields) <= 2 { // "{}"
		return []byte(head + "}"), nil
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

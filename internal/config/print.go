package config

import (
	"fmt"
	"io"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// masked replaces a secret in printed configuration.
const masked = "********"

// Print writes the configuration as YAML, every key in declaration order, with
// secrets masked (an auth key keeps its id: "main:********"). The output is a
// valid configuration file apart from the masked secrets.
func (c *Config) Print(w io.Writer) error {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	var b strings.Builder
	b.WriteString("# effective configuration (secrets masked)\n")
	for i := range t.NumField() {
		f := t.Field(i)
		value := v.Field(i).Interface()
		switch f.Tag.Get("secret") {
		case "true":
			value = maskSecrets(v.Field(i))
		case "url": // a URL whose password is masked (user:xxxxx@host)
			value = redactURL(v.Field(i).String())
		}
		if d, ok := value.(time.Duration); ok {
			value = d.String()
		}
		out, err := yaml.Marshal(map[string]any{f.Tag.Get("key"): value})
		if err != nil {
			return err
		}
		b.Write(out)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maskSecrets hides a secret string, or each "id:secret" of a list after its id.
func maskSecrets(v reflect.Value) any {
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return ""
		}
		return masked
	case reflect.Slice:
		out := make([]string, v.Len())
		for i := range out {
			s := v.Index(i).String()
			if id, _, ok := strings.Cut(s, ":"); ok {
				out[i] = id + ":" + masked
			} else {
				out[i] = masked
			}
		}
		return out
	}
	return fmt.Sprint(masked)
}

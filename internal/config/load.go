package config

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Load builds the configuration from defaults, then the YAML file (--config or
// PODIUM_CONFIG), then environment variables, then flags: later sources win.
func Load(args []string, getenv func(string) string) (Config, error) {
	cfg, _, err := LoadSwitches(args, getenv)
	return cfg, err
}

// Switches are the flags of `podium serve` that are not configuration.
type Switches struct {
	PrintConfig bool // print the effective configuration and exit
}

// LoadSwitches is Load that also returns the switches. The configuration is
// returned even when it does not validate, so that it can be printed.
func LoadSwitches(args []string, getenv func(string) string) (Config, Switches, error) {
	var sw Switches
	cfg := Default()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	path := fs.String("config", getenv("PODIUM_CONFIG"), "YAML configuration file (env PODIUM_CONFIG)")
	fs.BoolVar(&sw.PrintConfig, "print-config", false, "print the effective configuration, secrets masked, and exit")
	fields := bindFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		return cfg, sw, err
	}
	if fs.NArg() > 0 {
		return cfg, sw, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	flagValues := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if _, ok := fields[f.Name]; ok {
			flagValues[f.Name] = f.Value.String()
		}
	})
	cfg = Default()
	if *path != "" {
		if err := loadYAML(*path, &cfg); err != nil {
			return cfg, sw, err
		}
	}
	for key, v := range fields {
		if env := getenv(EnvName(key)); env != "" {
			if err := setString(v, env); err != nil {
				return cfg, sw, fmt.Errorf("%s (from %s): %w", key, EnvName(key), err)
			}
		}
	}
	for key, s := range flagValues {
		if err := setString(fields[key], s); err != nil {
			return cfg, sw, fmt.Errorf("%s: %w", key, err)
		}
	}
	return cfg, sw, cfg.Validate()
}

// EnvName is the environment variable for a key.
func EnvName(key string) string {
	return "PODIUM_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// bindFlags registers one flag per field and returns each key's field value.
func bindFlags(fs *flag.FlagSet, cfg *Config) map[string]reflect.Value {
	fields := map[string]reflect.Value{}
	v := reflect.ValueOf(cfg).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		key, help := t.Field(i).Tag.Get("key"), t.Field(i).Tag.Get("help")
		fv := v.Field(i)
		fields[key] = fv
		fs.Var(&fieldFlag{fv}, key, help+" (env "+EnvName(key)+")")
	}
	return fields
}

type fieldFlag struct{ v reflect.Value }

func (f *fieldFlag) String() string {
	if !f.v.IsValid() {
		return ""
	}
	if f.v.Kind() == reflect.Slice {
		return strings.Join(f.v.Interface().([]string), ",")
	}
	if d, ok := f.v.Interface().(time.Duration); ok {
		return d.String()
	}
	return fmt.Sprint(f.v.Interface())
}

func (f *fieldFlag) Set(s string) error { return setString(f.v, s) }

func (f *fieldFlag) IsBoolFlag() bool { return f.v.Kind() == reflect.Bool }

func setString(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int64: // time.Duration, the only int64 field
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 30s or 2m", s)
		}
		v.SetInt(int64(d))
	case reflect.Int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("%q is not an integer", s)
		}
		v.SetInt(int64(n))
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v.SetFloat(x)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("%q is not true or false", s)
		}
		v.SetBool(b)
	case reflect.Slice:
		var items []string
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		v.Set(reflect.ValueOf(items))
	}
	return nil
}

// loadYAML reads known keys only: an unknown key is an error naming it.
func loadYAML(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	fields := bindFlags(flag.NewFlagSet("", flag.ContinueOnError), cfg)
	for key, node := range raw {
		v, ok := fields[key]
		if !ok {
			return fmt.Errorf("config file %s: unknown key %q", path, key)
		}
		if err := node.Decode(v.Addr().Interface()); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, key, err)
		}
	}
	return nil
}

package duration

import (
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s":   90 * time.Second,
		"1h30m": 90 * time.Minute,
		"1d":    24 * time.Hour,
		"1.5d":  36 * time.Hour,
		"2d12h": 60 * time.Hour,
		" 1d ":  24 * time.Hour,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1x", "-5s", "1h2d", "NaNd", "1e300d"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Minute:               "5m",
		2 * time.Hour:                 "2h",
		90 * time.Minute:              "1h30m",
		time.Hour + 5*time.Second:     "1h0m5s",
		30 * time.Second:              "30s",
		1500 * time.Millisecond:       "1.5s",
		48*time.Hour + 30*time.Minute: "48h30m",
	} {
		if got := Format(d); got != want {
			t.Errorf("Format(%v) = %q, want %q", d, got, want)
		}
	}
}

// Package duration parses the durations a user writes, in HCL and on the
// command line alike: Go's syntax ("90s", "1h30m") with a leading number
// of days ("1d", "1.5d", "2d12h").
package duration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parse parses a Go duration, also accepting a leading number of days.
// Negative durations are an error.
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	var d time.Duration
	rest := s
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		days, err := strconv.ParseFloat(s[:i], 64)
		if err != nil || days < 0 || days > 1e5 {
			return 0, fmt.Errorf("invalid number of days %q", s[:i])
		}
		d = time.Duration(days * float64(24*time.Hour))
		rest = s[i+1:]
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("not a duration")
		}
		d += r
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration")
	}
	return d, nil
}

// Format writes d as a user writes it: "5m", "2h", "1h30m", not "5m0s",
// "2h0m0s"; "1h0m5s" stays as is.
func Format(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Package mask hides secrets in text that trialform shows: a trial's
// output (logs, the dashboard), diagnostics and the errors of platform
// APIs. It is pure (no I/O) and knows nothing of configurations or state.
//
// A secret is masked only where it stands as a whole token: where the
// bytes before and after it are not letters, digits or '_' (or the
// secret itself starts or ends with such a separator). Masking every
// occurrence would turn a log into "d(sensitive value)t(sensitive
// value)..." for a secret "a", and would tell a reader where the secret
// sits inside other words. A secret of several lines is masked line by
// line.
//
// A Set can hold secrets in clear (built from a configuration that has
// them) or only as salted, truncated hashes (Hashed: built from what an
// apply recorded in the state), so that `trialform logs` and the dashboard
// mask a value they were never given. A hash is SHA-256 of a random
// per-experiment salt and the value, truncated to 32 bits: enough to recognise the
// secret among a log's tokens (a false match hides one innocent token about
// once in four billion candidates), too short to confirm a guess of it
// (any 8-character secret shares its hash with millions of others).
package mask

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"unicode/utf16"
)

// Text is what is shown in place of a secret.
const Text = "(sensitive value)"

// MinLength is the shortest secret that masking can hide without
// giving it away: shorter values (a PIN, "a", "1") stand as tokens in
// ordinary output, so masking them hides innocent words and numbers and
// tells a reader which short word is the secret. Validate warns about
// shorter sensitive values; they are still masked.
const MinLength = 8

// IsToken reports whether b belongs to a token: a letter, a digit, '_'
// or any byte of a non-ASCII UTF-8 sequence.
func IsToken(b byte) bool {
	return b == '_' || b >= 0x80 || ('0' <= b && b <= '9') || ('a' <= b && b <= 'z') || ('A' <= b && b <= 'Z')
}

// Pieces splits a secret into what is matched: its lines (a secret of
// several lines, such as a key file, is masked line by line), without
// trailing "\r", empty ones dropped.
func Pieces(secret string) []string {
	var out []string
	for _, l := range strings.Split(secret, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// Encodings are the forms a secret takes in text that quotes or sends it:
// its text forms (TextForms) and base64 (standard and URL alphabets,
// padded or not). Forms equal to one before are left out.
func Encodings(secret string) []string {
	return addForms(TextForms(secret),
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawStdEncoding.EncodeToString([]byte(secret)),
		base64.URLEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)))
}

// TextForms are the forms of a secret a trial or a service that echoes a
// request prints: itself, JSON-escaped (without the quotes), URL query and
// path encoded (Go's escapers, and Python's urllib.parse.quote, which
// trial scripts use).
func TextForms(secret string) []string {
	var forms []string
	if b, err := json.Marshal(secret); err == nil {
		forms = append(forms, string(b[1:len(b)-1]), asciiJSON(string(b[1:len(b)-1])))
	}
	return addForms([]string{secret}, append(forms, url.QueryEscape(secret), url.PathEscape(secret), pythonQuote(secret))...)
}

// asciiJSON is JSON-escaped text s as Python's json.dumps writes it by
// default (ensure_ascii): every character past ASCII as \uXXXX, a
// surrogate pair past the BMP.
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// pythonQuote is Python's urllib.parse.quote with its default safe="/":
// every byte but letters, digits, "_.-~" and "/" as %XX (upper case).
func pythonQuote(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '/' || c == '_' || c == '.' || c == '-' || c == '~' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func addForms(out []string, forms ...string) []string {
	for _, f := range forms {
		if f != "" && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// BasicAuth is the base64 text an HTTP basic authorization header carries
// for user and password: a platform that sends one passes it to a Set
// beside the password.
func BasicAuth(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// Record is the masking data a Set keeps for one experiment in the state:
// a salt and the truncated hashes of the secrets' pieces and encodings,
// never the values.
type Record struct {
	Salt   string   `json:"salt"`   // base64, 16 random bytes
	Hashes []string `json:"hashes"` // "LENGTH:HASH", HASH 8 hex digits, sorted
}

// Set is the secrets to mask.
type Set struct {
	plain   map[string]bool
	salt    []byte
	hashed  map[int]map[uint32]bool // by length
	lengths []int                   // descending, of plain and hashed
}

// New returns a Set of the given secrets in clear, with their encodings.
func New(secrets ...string) *Set {
	s := &Set{}
	s.Add(secrets...)
	return s
}

// Add adds secrets in clear, with their encodings.
func (s *Set) Add(secrets ...string) {
	for _, sec := range secrets {
		for _, e := range Encodings(sec) {
			for _, p := range Pieces(e) {
				if s.plain == nil {
					s.plain = map[string]bool{}
				}
				if !s.plain[p] {
					s.plain[p] = true
					s.addLength(len(p))
				}
			}
		}
	}
}

func (s *Set) addLength(n int) {
	if !slices.Contains(s.lengths, n) {
		s.lengths = append(s.lengths, n)
		slices.SortFunc(s.lengths, func(a, b int) int { return b - a })
	}
}

// Empty reports whether s masks nothing.
func (s *Set) Empty() bool { return s == nil || len(s.lengths) == 0 }

// Hashed adds what rec recorded. A record with an unreadable salt or hash
// is an error (the state was edited by hand).
func (s *Set) Hashed(rec Record) error {
	salt, err := base64.StdEncoding.DecodeString(rec.Salt)
	if err != nil || len(salt) == 0 {
		return fmt.Errorf("mask record: bad salt")
	}
	if s.salt != nil && !bytes.Equal(s.salt, salt) {
		return fmt.Errorf("mask record: a Set takes one salt")
	}
	s.salt = salt
	for _, h := range rec.Hashes {
		n, v, err := parseHash(h)
		if err != nil {
			return err
		}
		if s.hashed == nil {
			s.hashed = map[int]map[uint32]bool{}
		}
		if s.hashed[n] == nil {
			s.hashed[n] = map[uint32]bool{}
		}
		s.hashed[n][v] = true
		s.addLength(n)
	}
	return nil
}

func parseHash(h string) (int, uint32, error) {
	var n int
	var x string
	if _, err := fmt.Sscanf(h, "%d:%s", &n, &x); err != nil || n <= 0 || len(x) != 8 {
		return 0, 0, fmt.Errorf("mask record: bad hash %q", h)
	}
	b, err := hex.DecodeString(x)
	if err != nil {
		return 0, 0, fmt.Errorf("mask record: bad hash %q", h)
	}
	return n, binary.BigEndian.Uint32(b), nil
}

// sum is the truncated salted hash of p: SHA-256 of the salt and p.
func (s *Set) sum(p []byte) uint32 {
	var buf [64]byte
	b := append(append(buf[:0], s.salt...), p...)
	h := sha256.Sum256(b)
	return binary.BigEndian.Uint32(h[:4])
}

// With returns rec with the hashes of secrets (the pieces of each of
// their Encodings: text forms and base64) added, under rec's salt (a new random one when it has none):
// what an apply keeps in the state. Hashes already there stay, so output
// of a trial that ran with a rotated secret stays masked; the result is
// sorted, so recording the same secrets twice changes nothing.
func (rec Record) With(secrets ...string) (Record, error) {
	if rec.Salt == "" {
		b := make([]byte, 16)
		if _, err := io.ReadFull(rand.Reader, b); err != nil {
			return rec, err
		}
		rec.Salt = base64.StdEncoding.EncodeToString(b)
	}
	salt, err := base64.StdEncoding.DecodeString(rec.Salt)
	if err != nil || len(salt) == 0 {
		return rec, fmt.Errorf("mask record: bad salt")
	}
	s := &Set{salt: salt}
	have := map[string]bool{}
	out := Record{Salt: rec.Salt}
	for _, h := range rec.Hashes {
		if !have[h] {
			have[h] = true
			out.Hashes = append(out.Hashes, h)
		}
	}
	for _, sec := range secrets {
		for _, e := range Encodings(sec) {
			for _, p := range Pieces(e) {
				h := fmt.Sprintf("%d:%08x", len(p), s.sum([]byte(p)))
				if !have[h] {
					have[h] = true
					out.Hashes = append(out.Hashes, h)
				}
			}
		}
	}
	slices.Sort(out.Hashes)
	return out, nil
}

func (s *Set) match(w []byte) bool {
	if s.plain[string(w)] {
		return true
	}
	if m := s.hashed[len(w)]; m != nil {
		return m[s.sum(w)]
	}
	return false
}

// startsToken reports whether a secret may start at b[i].
func startsToken(b []byte, i int) bool {
	return i == 0 || !IsToken(b[i-1]) || !IsToken(b[i])
}

// endsToken reports whether a secret may end before b[j].
func endsToken(b []byte, j int) bool {
	return j == len(b) || !IsToken(b[j-1]) || !IsToken(b[j])
}

// Bytes returns b with every whole-token occurrence of a secret replaced
// by Text (b itself when there is none; the longest secret wins where two
// start at the same place).
func (s *Set) Bytes(b []byte) []byte {
	if s.Empty() {
		return b
	}
	return s.base64Tokens(s.tokens(b))
}

// minBase64 is the shortest run of base64 text decoded to look for a
// secret inside: the encoding of "u:" and a secret of MinLength bytes.
const minBase64 = 12

// base64Tokens replaces each run of base64 text that decodes to text
// holding a secret (as Bytes finds it): an HTTP basic authorization
// header encodes "user:password", where the password's own encoding
// depends on the user's length.
func (s *Set) base64Tokens(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if !isBase64(b[i]) {
			i++
			continue
		}
		j := i
		for j < len(b) && isBase64(b[j]) {
			j++
		}
		for pad := 0; j < len(b) && pad < 2 && b[j] == '='; pad++ {
			j++ // padding
		}
		if j-i >= minBase64 && s.hidesIn(b[i:j]) {
			out = append(out, b[last:i]...)
			out = append(out, Text...)
			last = j
		}
		i = j
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

func isBase64(c byte) bool {
	return c == '+' || c == '/' || c == '-' || c == '_' || ('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// hidesIn reports whether run decodes (in either alphabet) to text that
// holds a secret.
func (s *Set) hidesIn(run []byte) bool {
	t := strings.TrimRight(string(run), "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.DecodeString(t); err == nil && len(d) > 0 {
			if m := s.tokens(d); len(m) != len(d) || !bytes.Equal(m, d) {
				return true
			}
		}
	}
	return false
}

// tokens replaces every whole-token occurrence of a secret (see Bytes).
func (s *Set) tokens(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		if !startsToken(b, i) {
			i++
			continue
		}
		n := 0
		for _, l := range s.lengths {
			j := i + l
			if j <= len(b) && endsToken(b, j) && s.match(b[i:j]) {
				n = l
				break
			}
		}
		if n == 0 {
			i++
			continue
		}
		out = append(out, b[last:i]...)
		out = append(out, Text...)
		i += n
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// Within reports whether t holds a secret given in clear: one of at
// least MinLength bytes anywhere, a shorter one as a whole token. (A
// quoted value in a message that holds a secret is hidden whole: it may be
// derived from the secret.)
func (s *Set) Within(t string) bool {
	for p := range s.plain {
		if len(p) >= MinLength && strings.Contains(t, p) {
			return true
		}
	}
	return s.String(t) != t
}

// String is Bytes for a string.
func (s *Set) String(t string) string {
	if s.Empty() {
		return t
	}
	return string(s.Bytes([]byte(t)))
}

// Writer returns a writer that passes lines through to w masked. It holds
// back an unfinished line until the next newline or Close. With an empty
// Set it writes straight through.
func (s *Set) Writer(w io.Writer) io.WriteCloser {
	return &writer{w: w, s: s}
}

type writer struct {
	w   io.Writer
	s   *Set
	buf []byte
}

// maxHeld bounds an unfinished line held back: a longer one is written
// masked up to its last blank (all of it when it has none), never through
// a secret (see safeCut).
const maxHeld = 1 << 20

func (r *writer) Write(p []byte) (int, error) {
	if r.s.Empty() {
		return r.w.Write(p)
	}
	r.buf = append(r.buf, p...)
	n := bytes.LastIndexAny(r.buf, "\n\r") + 1
	if n == 0 && len(r.buf) > maxHeld {
		n = bytes.LastIndexFunc(r.buf, func(c rune) bool { return c == ' ' || c == '\t' }) + 1
		if n == 0 {
			n = len(r.buf)
		}
		n = r.s.safeCut(r.buf, n)
	}
	if n == 0 {
		return len(p), nil
	}
	if _, err := r.w.Write(r.s.Bytes(r.buf[:n])); err != nil {
		return 0, err
	}
	r.buf = append(r.buf[:0], r.buf[n:]...)
	return len(p), nil
}

// safeCut returns where an unfinished line b may be cut, at or before p,
// so that the two parts, masked apart, show no piece of a secret: not
// inside a secret (one that may still run past b's end included) nor
// inside a run of base64 text. Where that leaves nothing before the cut
// (a line of one base64 run), p itself: what is held stays bounded.
func (s *Set) safeCut(b []byte, p int) int {
	q := min(p, len(b)-s.lengths[0]+1) // a secret starting before q ends within b
	for moved := true; moved && q > 0; {
		moved = false
		for _, l := range s.lengths {
			for i := max(0, q-l+1); i < q; i++ {
				if startsToken(b, i) && endsToken(b, i+l) && s.match(b[i:i+l]) {
					q, moved = i, true
					break
				}
			}
		}
		if q > 0 && q < len(b) && isBase64(b[q-1]) && isBase64(b[q]) {
			for q > 0 && isBase64(b[q-1]) {
				q--
			}
			moved = true
		}
	}
	if q <= 0 {
		return p
	}
	return q
}

// Close writes what is left of an unfinished line.
func (r *writer) Close() error {
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.w.Write(r.s.Bytes(r.buf))
	r.buf = nil
	return err
}

// Scrub is String for messages that are not a trial's output (errors of
// platform APIs, which may echo a request): a secret in clear of at least
// MinLength bytes is replaced wherever it occurs, even inside a longer
// word; shorter ones and hashed ones where they stand as whole tokens.
func (s *Set) Scrub(t string) string {
	if s.Empty() {
		return t
	}
	long := make([]string, 0, len(s.plain))
	for p := range s.plain {
		if len(p) >= MinLength {
			long = append(long, p)
		}
	}
	// longest first, so a secret that contains another goes whole
	slices.SortFunc(long, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, p := range long {
		t = strings.ReplaceAll(t, p, Text)
	}
	return s.String(t)
}

// Error is err with its message scrubbed by s (Scrub; err itself when
// nothing changed); errors.Is and errors.As still see err.
func (s *Set) Error(err error) error {
	if err == nil || s.Empty() {
		return err
	}
	msg := err.Error()
	clean := s.Scrub(msg)
	if clean == msg {
		return err
	}
	return &masked{err: err, msg: clean}
}

type masked struct {
	err error
	msg string
}

func (m *masked) Error() string { return m.msg }
func (m *masked) Unwrap() error { return m.err }

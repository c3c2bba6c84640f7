package mask

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/url"
	"strings"
	"testing"
)

// Issue 25 item 16: a short secret is masked only where it stands as a
// whole token, so "a" does not turn "data" into "d(sensitive value)t...".
func TestWholeTokens(t *testing.T) {
	for _, tc := range []struct {
		secrets []string
		in, out string
	}{
		{[]string{"a"}, "data a banana\n", "data (sensitive value) banana\n"},
		{[]string{"a"}, "a=a,a\n", "(sensitive value)=(sensitive value),(sensitive value)\n"},
		{[]string{"s3cr3t-Tok3n"}, "token s3cr3t-Tok3n! xs3cr3t-Tok3n s3cr3t-Tok3nx\n", "token (sensitive value)! xs3cr3t-Tok3n s3cr3t-Tok3nx\n"},
		{[]string{"s3cr3t-Tok3n"}, "TOKEN=s3cr3t-Tok3n;'s3cr3t-Tok3n'\n", "TOKEN=(sensitive value);'(sensitive value)'\n"},
		// a secret that starts with a separator matches after a letter
		{[]string{"-k3y"}, "x-k3y\n", "x(sensitive value)\n"},
		// the longest secret wins where two start at the same place
		{[]string{"tok3n", "Bearer tok3n"}, "Authorization: Bearer tok3n\n", "Authorization: (sensitive value)\n"},
		// text forms: JSON-escaped, URL query (base64: TestError)
		{[]string{`p"ss w/rd+1`}, `{"pw": "p\"ss w/rd+1"} ?pw=p%22ss+w%2Frd%2B1` + "\n",
			`{"pw": "(sensitive value)"} ?pw=(sensitive value)` + "\n"},
		// a secret of several lines is masked line by line
		{[]string{"line-one-xx\nline-two-yy\n"}, "key:\nline-one-xx\nline-two-yy\nend\n", "key:\n(sensitive value)\n(sensitive value)\nend\n"},
		// UTF-8 letters are token bytes
		{[]string{"geheim"}, "ägeheim geheimé geheim\n", "ägeheim geheimé (sensitive value)\n"},
	} {
		s := New(tc.secrets...)
		if got := s.String(tc.in); got != tc.out {
			t.Errorf("%q in %q:\n got %q\nwant %q", tc.secrets, tc.in, got, tc.out)
		}
		// the same through hashes only
		rec, err := Record{}.With(tc.secrets...)
		if err != nil {
			t.Fatal(err)
		}
		for _, sec := range tc.secrets {
			for _, h := range rec.Hashes {
				if len(sec) > 3 && strings.Contains(h, sec) {
					t.Errorf("record holds the secret: %v", rec)
				}
			}
		}
		hs := &Set{}
		if err := hs.Hashed(rec); err != nil {
			t.Fatal(err)
		}
		if got := hs.String(tc.in); got != tc.out {
			t.Errorf("hashed %q in %q:\n got %q\nwant %q", tc.secrets, tc.in, got, tc.out)
		}
	}
}

// Recording is deterministic under one salt and keeps earlier hashes (a
// rotated secret's old output stays masked).
func TestRecordAccumulates(t *testing.T) {
	r1, err := Record{}.With("first-secret-1")
	if err != nil {
		t.Fatal(err)
	}
	r2, _ := r1.With("first-secret-1")
	if strings.Join(r1.Hashes, ",") != strings.Join(r2.Hashes, ",") || r1.Salt != r2.Salt {
		t.Fatalf("recording again changed the record: %v -> %v", r1, r2)
	}
	r3, _ := r2.With("second-secret-2")
	s := &Set{}
	if err := s.Hashed(r3); err != nil {
		t.Fatal(err)
	}
	if got := s.String("first-secret-1 second-secret-2 third"); got != Text+" "+Text+" third" {
		t.Errorf("got %q", got)
	}
	other, _ := Record{}.With("first-secret-1")
	if other.Salt == r1.Salt {
		t.Error("two records share a salt")
	}
	if err := (&Set{}).Hashed(Record{Salt: r1.Salt, Hashes: []string{"x"}}); err == nil {
		t.Error("a bad hash was accepted")
	}
}

// The writer masks across writes that split a line, and flushes an
// unfinished line on Close.
func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := New("s3cr3t-Tok3n").Writer(&buf)
	for _, p := range []string{"the token is s3c", "r3t-Tok3n!\nand s3cr3t", "-Tok3n"} {
		io.WriteString(w, p)
	}
	w.Close()
	if got := buf.String(); got != "the token is (sensitive value)!\nand (sensitive value)" {
		t.Errorf("got %q", got)
	}
	buf.Reset()
	w = New().Writer(&buf)
	io.WriteString(w, "no secrets, no newline")
	if buf.String() != "no secrets, no newline" {
		t.Errorf("an empty set held output back: %q", buf.String())
	}
}

// Issue 25 item D: an error that echoes a request shows no encoding of a
// secret that was sent, and errors.Is still sees through.
func TestError(t *testing.T) {
	pw := "dlts-Pa55 w/&rd"
	sentinel := errors.New("sentinel")
	body := "400 bad request: GET /api?email=a%40b.c&password=" + url.QueryEscape(pw) + " auth " + BasicAuth("alice", pw) + ` {"password":"dlts-Pa55 w/&rd"}`
	err := New(pw, BasicAuth("alice", pw)).Error(errors.Join(sentinel, errors.New(body)))
	if strings.Contains(err.Error(), "Pa55") || strings.Contains(err.Error(), url.QueryEscape(pw)) || strings.Contains(err.Error(), BasicAuth("alice", pw)) {
		t.Errorf("error shows the secret: %v", err)
	}
	if !strings.Contains(err.Error(), "password="+Text) {
		t.Errorf("error lost its text: %v", err)
	}
	// a long secret goes even inside a word; a short one only whole
	if got := New("Pa55w0rd-xyz", "ab").Scrub("xPa55w0rd-xyzx ab abc"); got != "x"+Text+"x "+Text+" abc" {
		t.Errorf("Scrub: %q", got)
	}
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is does not see through")
	}
}

func BenchmarkMaskLog(b *testing.B) {
	rec, _ := Record{}.With("s3cr3t-Tok3n-9f8e7d", "Bearer s3cr3t-Tok3n-9f8e7d", "hunter2-pass")
	s := &Set{}
	s.Hashed(rec)
	line := []byte("epoch 12 step 3400 loss=0.1234 acc=0.9876 lr=0.001 time=12.5s token is s3cr3t-Tok3n-9f8e7d\n")
	b.SetBytes(int64(len(line)))
	for i := 0; i < b.N; i++ {
		s.Bytes(line)
	}
}

// TestRecordMasksEncodedForms: what an apply records masks the forms a
// trial prints a secret in besides its text: base64 (a basic-auth header
// it logs, a token it encodes) and Python's urllib.parse.quote (which,
// unlike Go's escapers, keeps '/' and escapes '+' and '~' differently).
func TestRecordMasksEncodedForms(t *testing.T) {
	const secret = "pa ss/w+rd~42!"
	rec, err := Record{}.With(secret)
	if err != nil {
		t.Fatal(err)
	}
	s := &Set{}
	if err := s.Hashed(rec); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"auth: " + base64.StdEncoding.EncodeToString([]byte(secret)) + " sent",
		"auth: " + base64.RawURLEncoding.EncodeToString([]byte(secret)) + " sent",
		"url: https://h/?p=pa%20ss/w%2Brd~42%21 sent",
	} {
		if got := s.String(line); strings.Contains(got, "sent") && !strings.Contains(got, Text) {
			t.Errorf("%q was not masked: %q", line, got)
		}
	}
}

// What a trial prints of a secret that masking did not find before: an
// HTTP basic-auth header (base64 of "user:secret", where the secret's own
// encoding depends on the user's length) and Python's default json.dumps
// of a secret with non-ASCII characters (\uXXXX escapes). Masked from the
// secret in clear and from the hashes apply records alike.
func TestMaskBasicAuthAndASCIIJSON(t *testing.T) {
	const secret = "S3cr3t-Tok3n_ABC/+=xyz"
	const accented = "pässwörd-Geheimnis-123"
	rec, err := Record{}.With(secret, accented)
	if err != nil {
		t.Fatal(err)
	}
	hashed := New()
	if err := hashed.Hashed(rec); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]*Set{"clear": New(secret, accented), "hashed": hashed} {
		for _, user := range []string{"u", "ab", "bob", "alice"} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				b64 := enc.EncodeToString([]byte(user + ":" + secret))
				line := "Authorization: Basic " + b64 + "\n"
				if got := set.String(line); got != "Authorization: Basic "+Text+"\n" {
					t.Errorf("%s: basic auth of user %q: %q", name, user, got)
				}
				if got := set.String("token=" + b64 + "; next"); got != "token="+Text+"; next" {
					t.Errorf("%s: after token=: %q", name, got)
				}
			}
		}
		line := `{"pw": "p\u00e4ssw\u00f6rd-Geheimnis-123"}`
		if got := set.String(line); got != `{"pw": "`+Text+`"}` {
			t.Errorf("%s: ASCII JSON: %q", name, got)
		}
		// base64 text that decodes to something else is left alone
		other := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("bob:another-password")) + "\n"
		if got := set.String(other); got != other {
			t.Errorf("%s: an unrelated header was masked: %q", name, got)
		}
	}
}

// A line over maxHeld is written in parts, and no part ends or starts
// inside a secret: a JSON line of 3 MB without a blank, a passphrase
// with blanks in a long line of words, and base64 basic-auth values,
// written in pieces of several sizes (so that cuts fall in every part of
// a line), show every secret masked whole and no piece of one (the cut
// fell inside one: `"s3cr3t-Tok3n-` ... `n-9f8e7d"`).
func TestWriterLongLineCut(t *testing.T) {
	const tok, phrase = "s3cr3t-Tok3n-9f8e7d", "correct horse battery staple"
	auth := BasicAuth("alice", tok)
	rec, err := Record{}.With(tok, phrase)
	if err != nil {
		t.Fatal(err)
	}
	hashed := &Set{}
	if err := hashed.Hashed(rec); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, unit, secret string }{
		{"json", `"Bearer","` + tok + `",`, tok},
		{"phrase", "the passphrase " + phrase + " and ", phrase},
		{"base64", "Authorization:" + auth + ",", auth},
	} {
		for k, set := range []*Set{New(tok, phrase), hashed, New(tok, phrase), hashed} {
			line := strings.Repeat(c.unit, 3*maxHeld/len(c.unit)) + "\n"
			var buf bytes.Buffer
			w := set.Writer(&buf)
			size := []int{32 << 10, 4099, 4111, 1000003}[k]
			for p := line; p != ""; {
				n := min(len(p), size)
				io.WriteString(w, p[:n])
				p = p[n:]
			}
			w.Close()
			got := buf.String()
			want := strings.Repeat(strings.Replace(c.unit, c.secret, Text, 1), 3*maxHeld/len(c.unit)) + "\n"
			if got != want {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Errorf("%s, pieces of %d: output differs at byte %d of %d: %q", c.name, size, i, len(got), got[max(0, i-40):min(len(got), i+40)])
			}
		}
	}
}

package command

import (
	"net/http"
	"testing"
)

// TestHookAuthorized: the webhook secret in each form a forge sends it;
// the signature case is GitHub's documented example (secret "It's a
// Secret to Everybody", payload "Hello, World!").
func TestHookAuthorized(t *testing.T) {
	const secret = "It's a Secret to Everybody"
	body := []byte("Hello, World!")
	sig := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	for _, tc := range []struct {
		name, header, value string
		want                bool
	}{
		{"bearer", "Authorization", "Bearer " + secret, true},
		{"bearer wrong", "Authorization", "Bearer nope", false},
		{"basic is not bearer", "Authorization", "Basic " + secret, false},
		{"gitlab", "X-Gitlab-Token", secret, true},
		{"gitlab wrong", "X-Gitlab-Token", secret + "x", false},
		{"github signature", "X-Hub-Signature-256", sig, true},
		{"github signature upper case", "X-Hub-Signature-256", "sha256=757107EA0EB2509FC211221CCE984B8A37570B6D7586C22C46F4379C8B043E17", true},
		{"github signature of another body", "X-Hub-Signature-256", "sha256=" + sig[len(sig)-64:len(sig)-1] + "0", false},
		{"sha1 signature is not enough", "X-Hub-Signature", "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59", false},
		{"nothing", "", "", false},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set(tc.header, tc.value)
		}
		if got := hookAuthorized(secret, h, body); got != tc.want {
			t.Errorf("%s: authorized %v, want %v", tc.name, got, tc.want)
		}
	}
}

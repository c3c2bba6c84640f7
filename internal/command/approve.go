package command

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"

	"strings"
	"time"

	"github.com/trialform/trialform/controller"
	"github.com/trialform/trialform/internal/views"
)

func runApprove(ctx context.Context, g *Globals, args []string) int {
	fs := flag.NewFlagSet("approve", flag.ContinueOnError)
	var url, tokenFile, by string
	fs.StringVar(&url, "controller", "", "the controller's -listen URL (e.g. http://localhost:8080)")
	fs.StringVar(&tokenFile, "token-file", "", "file holding the controller's approve token (else $"+envApproveToken+")")
	fs.StringVar(&by, "by", "", "who approves (recorded in the controller's log; default $USER)")
	rest, code, ok := g.parse(fs, args, argSpec{min: 1, max: 2, hint: "approve takes EXPERIMENT and optionally the SPEC_HASH the controller shows at GET /held."})
	if !ok {
		return code
	}
	if url == "" {
		return g.errorf("approve needs -controller: the URL the controller serves (its -listen)")
	}
	url = strings.TrimRight(url, "/")
	token, err := secretFrom(tokenFile, g.getenv(envApproveToken))
	if err != nil {
		return g.errorf("-token-file: %v", err)
	}
	if token == "" {
		return g.errorf("no approve token: give -token-file or set $%s", envApproveToken)
	}
	if by == "" {
		by = g.getenv("USER")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	exp := rest[0]
	held, err := getHeld(ctx, client, url)
	if err != nil {
		return g.errorf("%v", err)
	}
	var match *controller.Held
	for i := range held {
		if held[i].Experiment == exp {
			match = &held[i]
		}
	}
	if match == nil {
		var names []string
		for _, h := range held {
			names = append(names, h.Experiment)
		}
		if len(names) == 0 {
			return g.errorf("the controller holds no change: nothing to approve")
		}
		return g.errorf("the controller holds no change of experiment %q (it holds: %s)", exp, strings.Join(names, ", "))
	}
	if len(rest) == 2 && rest[1] != match.SpecHash {
		return g.errorf("experiment %s's held change moves to spec %s, not %s: a later commit replaced it; look again (GET %s/held)", exp, match.SpecHash, rest[1], url)
	}
	body, _ := json.Marshal(controller.Approval{Change: match.Change, By: by})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/approve", bytes.NewReader(body))
	if err != nil {
		return g.errorf("%v", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return g.errorf("approve: %v", err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return g.errorf("the controller refused: %s %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	views.Approved(g.IO.Out, match.Experiment, match.SpecHash, match.Generation, match.Removed, match.Teardowns, match.Reasons)
	return 0
}

func getHeld(ctx context.Context, client *http.Client, url string) ([]controller.Held, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/held", nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reach the controller: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/held: %s", url, resp.Status)
	}
	var held []controller.Held
	if err := json.NewDecoder(resp.Body).Decode(&held); err != nil {
		return nil, fmt.Errorf("GET %s/held: %v", url, err)
	}
	return held, nil
}

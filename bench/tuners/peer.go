package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/trialform/trialform/tuner/space"
)

// lineProc is a child process spoken to in JSON lines: one request, one
// answer.
type lineProc struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	name string
}

// startProc runs python on script with numeric libraries held to one
// thread each, so that one process per worker goroutine fills the cores
// without oversubscribing them.
func startProc(python, script string) (*lineProc, error) {
	cmd := exec.Command(python, script)
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1", "PYTHONDONTWRITEBYTECODE=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s %s: %w", python, script, err)
	}
	return &lineProc{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<16), name: filepath.Base(script)}, nil
}

// call sends req and decodes the answer into resp; an answer with "error"
// becomes an error.
func (p *lineProc) call(req any, resp any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%s: write: %w", p.name, err)
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("%s: read: %w", p.name, err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return fmt.Errorf("%s: %s", p.name, e.Error)
	}
	return json.Unmarshal(line, resp)
}

func (p *lineProc) close() {
	p.in.Close()
	p.cmd.Wait()
}

// procs holds one worker goroutine's child processes by script, started on
// first use.
type procs struct {
	python, dir string
	m           map[string]*lineProc
}

func (ps *procs) get(script string) (*lineProc, error) {
	if p := ps.m[script]; p != nil {
		return p, nil
	}
	p, err := startProc(ps.python, filepath.Join(ps.dir, script))
	if err != nil {
		return nil, err
	}
	if ps.m == nil {
		ps.m = map[string]*lineProc{}
	}
	ps.m[script] = p
	return p, nil
}

func (ps *procs) closeAll() {
	for _, p := range ps.m {
		p.close()
	}
	ps.m = nil
}

const (
	peerScript    = "optuna_peer.py"
	nniPeerScript = "nni_peer.py"
)

// optunaParam is one parameter as optuna_peer.py takes it.
type optunaParam struct {
	Name    string   `json:"name"`
	Type    string   `json:"type"` // float, int, categorical
	Low     *float64 `json:"low,omitempty"`
	High    *float64 `json:"high,omitempty"`
	Log     bool     `json:"log,omitempty"`
	Step    *float64 `json:"step,omitempty"`
	Choices []any    `json:"choices,omitempty"`
}

func fp(x float64) *float64 { return &x }

func integral(x float64) bool { return x == math.Trunc(x) }

// onGrid reports whether x is a whole multiple of q (up to rounding).
func onGrid(x, q float64) bool {
	k := math.Round(x / q)
	return math.Abs(k*q-x) <= 1e-9*math.Max(1, math.Abs(x))
}

// OptunaSpace maps a search space onto Optuna 3.1's distributions:
//
//	uniform [lo, hi]           FloatDistribution(lo, hi)
//	loguniform [lo, hi]        FloatDistribution(lo, hi, log=True)
//	quniform [lo, hi, q]       FloatDistribution(lo, hi, step=q) when lo and hi are multiples of q
//	                           (then both sides have the same grid); else FloatDistribution(lo, hi)
//	                           and the Go side rounds Optuna's value as NNI does
//	qloguniform [lo, hi, 1]    IntDistribution(lo, hi, log=True) for integral lo, hi (a log-int);
//	                           other q: FloatDistribution(lo, hi, log=True), rounded on the Go side
//	randint [lo, hi)           IntDistribution(lo, hi-1)
//	choice (plain options)     CategoricalDistribution(options)
//
// Nested choices and the unbounded normal kinds have no Optuna counterpart
// and are refused.
func OptunaSpace(sp *space.Space) ([]optunaParam, error) {
	var out []optunaParam
	for _, p := range sp.Params {
		op := optunaParam{Name: p.Name}
		a := p.Args
		switch p.Kind {
		case space.Uniform:
			op.Type, op.Low, op.High = "float", fp(a[0]), fp(a[1])
		case space.Loguniform:
			op.Type, op.Low, op.High, op.Log = "float", fp(a[0]), fp(a[1]), true
		case space.Quniform:
			op.Type, op.Low, op.High = "float", fp(a[0]), fp(a[1])
			if onGrid(a[0], a[2]) && onGrid(a[1], a[2]) {
				op.Step = fp(a[2])
			}
		case space.Qloguniform:
			if a[2] == 1 && integral(a[0]) && integral(a[1]) {
				op.Type, op.Low, op.High, op.Log = "int", fp(a[0]), fp(a[1]), true
			} else {
				op.Type, op.Low, op.High, op.Log = "float", fp(a[0]), fp(a[1]), true
			}
		case space.Randint:
			lo, hi, ok := space.IntRange(p)
			if !ok {
				return nil, fmt.Errorf("param %q: empty randint", p.Name)
			}
			op.Type, op.Low, op.High = "int", fp(float64(lo)), fp(float64(hi-1))
		case space.Choice:
			op.Type = "categorical"
			for _, o := range p.Options {
				if space.IsNested(o) {
					return nil, fmt.Errorf("param %q: nested choices have no Optuna counterpart", p.Name)
				}
				op.Choices = append(op.Choices, o.Value)
			}
		default:
			return nil, fmt.Errorf("param %q: kind %s has no bounded Optuna counterpart", p.Name, p.Kind)
		}
		out = append(out, op)
	}
	return out, nil
}

// FromOptuna turns Optuna's params into trialform values: numbers become
// float64 and q-kinds are rounded as NNI rounds them (a no-op where the
// grids agree). It fails when a value falls outside the space, which would
// mean the mapping above is not faithful.
func FromOptuna(sp *space.Space, in map[string]any) (space.Params, error) {
	out := space.Params{}
	for _, p := range sp.Params {
		v, ok := in[p.Name]
		if !ok {
			return nil, fmt.Errorf("optuna gave no %q", p.Name)
		}
		if p.Kind != space.Choice {
			f, ok := space.ToFloat(v)
			if !ok {
				return nil, fmt.Errorf("optuna gave %q = %v, not a number", p.Name, v)
			}
			v = space.Quantize(p, f)
		}
		if !space.Contains(p, v) {
			return nil, fmt.Errorf("optuna's %q = %v is outside the space", p.Name, v)
		}
		out[p.Name] = v
	}
	return out, nil
}

var studyIDs struct {
	sync.Mutex
	n int
}

func nextStudyID() string {
	studyIDs.Lock()
	defer studyIDs.Unlock()
	studyIDs.n++
	return fmt.Sprintf("s%d", studyIDs.n)
}

// optunaStudy is one open study in a peer process.
type optunaStudy struct {
	peer *lineProc
	id   string
	sp   *space.Space
}

func newOptunaStudy(peer *lineProc, sampler string, seed int64, constantLiar bool, sp *space.Space) (*optunaStudy, error) {
	spec, err := OptunaSpace(sp)
	if err != nil {
		return nil, err
	}
	s := &optunaStudy{peer: peer, id: nextStudyID(), sp: sp}
	var ok struct{}
	err = peer.call(map[string]any{"op": "new", "id": s.id, "sampler": sampler, "seed": seed,
		"constant_liar": constantLiar, "space": spec}, &ok)
	return s, err
}

func (s *optunaStudy) ask() (int, space.Params, error) {
	var r struct {
		Number int            `json:"number"`
		Params map[string]any `json:"params"`
	}
	if err := s.peer.call(map[string]any{"op": "ask", "id": s.id}, &r); err != nil {
		return 0, nil, err
	}
	p, err := FromOptuna(s.sp, r.Params)
	return r.Number, p, err
}

func (s *optunaStudy) tell(number int, value float64) error {
	var ok struct{}
	return s.peer.call(map[string]any{"op": "tell", "id": s.id, "number": number, "value": value}, &ok)
}

func (s *optunaStudy) close() {
	var ok struct{}
	s.peer.call(map[string]any{"op": "close", "id": s.id}, &ok)
}

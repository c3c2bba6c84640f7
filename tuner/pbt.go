package tuner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path"
	"sort"

	"github.com/trialform/trialform/internal/decl"
	"github.com/trialform/trialform/tuner/space"
)

// Params through which pbt tells a trial where to load its starting
// checkpoint from ("" in the first round) and where to save its own, as
// NNI's PBT tuner does.
const (
	LoadCheckpointParam = "load_checkpoint_dir"
	SaveCheckpointParam = "save_checkpoint_dir"
)

// PBTSettings are the pbt tuner's settings.
type PBTSettings struct {
	PopulationSize      int     `hcl:"population_size,optional" range:"[2,)" default:"10" doc:"trials per round"`
	Factor              float64 `hcl:"factor,optional" range:"[1e-9, 0.5]" default:"0.2" doc:"the fraction of a round replaced by copies of the best"`
	ResampleProbability float64 `hcl:"resample_probability,optional" range:"[0, 1]" default:"0.25" doc:"chance that an exploring copy draws a param afresh instead of perturbing it"`
	Perturbation        float64 `hcl:"perturbation,optional" range:"[1e-9, 0.999]" default:"0.2" doc:"numeric params of a copy are multiplied by 1 - perturbation or 1 + perturbation"`
	CheckpointDir       string  `hcl:"checkpoint_dir,optional" default:"checkpoints" doc:"the directory shared by all rounds' checkpoints, relative to code_dir or absolute"`
	Seeded
}

func pbtKind() Kind {
	return Kind{
		Name: "pbt", Spaces: "all kinds",
		Summary: "population based training in rounds: each trial gets `load_checkpoint_dir` and `save_checkpoint_dir` params (NNI's names); the bottom `factor` of a round copies a top trial's checkpoint and perturbed params",
		Settings: func() any {
			return &PBTSettings{PopulationSize: 10, Factor: 0.2, ResampleProbability: 0.25, Perturbation: 0.2, CheckpointDir: "checkpoints"}
		},
		New:    newPBT,
		Params: []string{LoadCheckpointParam, SaveCheckpointParam},
	}
}

// pbt is population based training (Jaderberg et al.) as NNI runs it:
// rounds of population_size trials. Trial seq belongs to round
// seq/population_size as member seq%population_size and saves its
// checkpoint to checkpoint_dir/ckpt-SEQ. In round r > 0 a member whose
// previous trial ranked in the bottom factor of round r-1 exploits: it
// copies the params and checkpoint of a random top-factor trial and
// explores by perturbing them; the others continue from their own
// checkpoint with their own params. A round waits (WaitError) for the
// previous one to finish. Each trial should train for one period and save.
type pbt struct {
	seeder
	sp         *space.Space
	pop        int
	factor     float64
	resample   float64
	perturb    float64
	checkpoint string
}

func newPBT(cfg any, sp *space.Space) (Tuner, error) {
	c := cfg.(*PBTSettings)
	if c.CheckpointDir == "" {
		return nil, decl.Errorf("checkpoint_dir", "checkpoint_dir must be a non-empty string, e.g. checkpoint_dir = \"/nfs/ckpt\".")
	}
	if sp != nil {
		for _, p := range sp.Params {
			if p.Name == LoadCheckpointParam || p.Name == SaveCheckpointParam {
				return nil, fmt.Errorf("tuner %q sets the param %q itself; remove it from the search space", "pbt", p.Name)
			}
		}
	}
	return &pbt{seeder: c.seeder(), sp: sp, pop: c.PopulationSize, factor: c.Factor, resample: c.ResampleProbability, perturb: c.Perturbation, checkpoint: c.CheckpointDir}, nil
}

func (t *pbt) saveDir(seq int) string { return path.Join(t.checkpoint, fmt.Sprintf("ckpt-%04d", seq)) }

func (t *pbt) Suggest(req Request) ([]space.Params, error) {
	sp, err := spaceOf(req, t.sp)
	if err != nil {
		return nil, err
	}
	bySeq := map[int]Observation{}
	for _, o := range history(req) {
		bySeq[o.Seq] = o
	}
	asked := map[int]bool{}
	for _, s := range req.Seqs {
		asked[s] = true
	}
	nReplace := max(1, int(math.Floor(t.factor*float64(t.pop))))
	out := make([]space.Params, 0, len(req.Seqs))
	for _, i := range ascending(req.Seqs) {
		seq := req.Seqs[i]
		round, member := seq/t.pop, seq%t.pop
		rng := t.rng(req, seq)
		var p space.Params
		if round == 0 {
			p = space.SampleSpace(sp, rng)
			p[LoadCheckpointParam] = ""
		} else {
			// Rank the previous round, best first; failed (or missing) last.
			type ranked struct {
				seq   int
				o     Observation
				score float64
			}
			var rs []ranked
			prev := (round - 1) * t.pop
			for s := prev; s < prev+t.pop; s++ {
				o, ok := bySeq[s]
				switch {
				case ok && o.State == Completed && !math.IsNaN(o.Value):
					v := o.Value
					if req.Goal == Minimize {
						v = -v
					}
					rs = append(rs, ranked{s, o, v})
				case ok && o.State == Failed, !ok && s < seq && !asked[s]:
					rs = append(rs, ranked{s, o, math.Inf(-1)})
				default:
					return out, &WaitError{Ready: len(out), Why: fmt.Sprintf(
						"pbt waits for round %d (trials %d-%d) to finish before starting round %d", round-1, prev, prev+t.pop-1, round)}
				}
			}
			sort.SliceStable(rs, func(a, b int) bool { return rs[a].score > rs[b].score })
			rank := 0
			for k, r := range rs {
				if r.seq == prev+member {
					rank = k
				}
			}
			self := rs[rank]
			if rank >= len(rs)-nReplace || self.o.Params == nil {
				// Exploit a top trial, then explore around it.
				top := rs[rng.IntN(min(nReplace, len(rs)))]
				if top.o.Params == nil {
					p = space.SampleSpace(sp, rng)
					p[LoadCheckpointParam] = ""
				} else {
					p = t.explore(sp, top.o.Params, rng)
					p[LoadCheckpointParam] = t.saveDir(top.seq)
				}
			} else {
				p = space.Params{}
				for k, v := range self.o.Params {
					p[k] = v
				}
				p[LoadCheckpointParam] = t.saveDir(self.seq)
			}
		}
		p[SaveCheckpointParam] = t.saveDir(seq)
		out = append(out, p)
		bySeq[seq] = Observation{Seq: seq, Params: p, State: Pending}
	}
	res := make([]space.Params, len(req.Seqs))
	for n, i := range ascending(req.Seqs) {
		res[i] = out[n]
	}
	return res, nil
}

// explore perturbs a copy of params: each param is drawn afresh with
// probability resample; otherwise numeric ones are multiplied by 1 ± the
// perturbation (kept in range and on their q-grid), choices kept.
func (t *pbt) explore(sp *space.Space, from space.Params, rng *rand.Rand) space.Params {
	p := space.Params{}
	for k, v := range from {
		if k != LoadCheckpointParam && k != SaveCheckpointParam {
			p[k] = v
		}
	}
	for _, par := range sp.Params {
		if rng.Float64() < t.resample {
			p[par.Name] = space.Sample(par, rng)
			continue
		}
		if par.Kind == space.Choice {
			continue
		}
		d, ok := newNumDim(par)
		v, isNum := space.ToFloat(p[par.Name])
		if !ok || !isNum {
			continue
		}
		f := 1 + t.perturb
		if rng.Float64() < 0.5 {
			f = 1 - t.perturb
		}
		nv := v * f
		if nv == v { // 0 stays 0 under a factor: nudge by the range instead
			nv = v + (f-1)*math.Min(1, math.Abs(d.hi-d.lo))
		}
		u := d.toModel(nv)
		if math.IsNaN(u) || math.IsInf(u, 0) {
			continue
		}
		u = math.Max(d.lo, math.Min(d.hi, u))
		fin, _, _ := d.finish(u)
		p[par.Name] = fin
	}
	return p
}

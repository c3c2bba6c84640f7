#!/usr/bin/python3
"""Optuna's side of trialform's tuner benchmark (bench/tuners).

Run with Debian's /usr/bin/python3 and python3-optuna (3.1). It reads one
JSON object per line on stdin and answers each with one JSON line on
stdout; the Go side evaluates every objective, so both sides see the same
problems. Several studies can be open at once, each under its own id.

  {"op": "new", "id": "s", "sampler": "tpe"|"random", "seed": 1,
   "constant_liar": false, "space": [PARAM, ...]}            -> {"ok": true}
  {"op": "ask", "id": "s"}             -> {"number": 0, "params": {...}}
  {"op": "tell", "id": "s", "number": 0, "value": 1.5}       -> {"ok": true}
  {"op": "new", ..., "sampler": "nsga2"|"motpe"|"random", "directions":
   ["minimize", ...]}  a multi-objective study; tell it "values": [...]
  {"op": "close", "id": "s"}                                 -> {"ok": true}
  {"op": "latency", "space": [...], "history": 1000, "reps": 20, "seed": 1}
      -> {"median_ms": ..., "all_ms": [...]}   (TPE ask on a pre-filled study)
  {"op": "version"}                    -> {"optuna": "3.1.0"}

PARAM is {"name", "type": "float"|"int"|"categorical", "low", "high",
"log", "step", "choices"}; the Go side maps trialform's search-space kinds
onto these. Errors come back as {"error": "..."}.
"""
import json
import math
import sys
import time
import warnings

import numpy as np
import optuna
from optuna.distributions import (
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore")  # constant_liar is an ExperimentalWarning in 3.1


# Optuna 3.1's default gamma and weights, written out so that the benchmark
# pins them: the best min(ceil(n/10), 25) trials are "good"; with 25 or more
# observations the oldest n-25 get linearly ramped weights.
def gamma(n):
    return min(int(math.ceil(0.1 * n)), 25)


def weights(n):
    if n == 0:
        return np.asarray([])
    if n < 25:
        return np.ones(n)
    return np.concatenate([np.linspace(1.0 / n, 1.0, num=n - 25), np.ones(25)])


def make_sampler(kind, seed, constant_liar=False):
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if kind == "tpe":
        return optuna.samplers.TPESampler(
            consider_prior=True,
            prior_weight=1.0,
            consider_magic_clip=True,
            consider_endpoints=False,
            n_startup_trials=10,
            n_ei_candidates=24,
            gamma=gamma,
            weights=weights,
            seed=seed,
            multivariate=False,
            group=False,
            warn_independent_sampling=False,
            constant_liar=constant_liar,
        )
    raise ValueError("unknown sampler %r" % kind)


def make_multi_sampler(kind, seed):
    """Optuna 3.1's multi-objective samplers, as a user gets them."""
    if kind == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if kind == "motpe":
        # TPESampler is MOTPE when the study has several directions.
        return optuna.samplers.TPESampler(seed=seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError("unknown multi-objective sampler %r" % kind)


def distributions(spec):
    out = {}
    for p in spec:
        t = p["type"]
        if t == "float":
            out[p["name"]] = FloatDistribution(
                p["low"], p["high"], log=p.get("log", False), step=p.get("step")
            )
        elif t == "int":
            out[p["name"]] = IntDistribution(
                p["low"], p["high"], log=p.get("log", False), step=p.get("step", 1)
            )
        elif t == "categorical":
            out[p["name"]] = CategoricalDistribution(p["choices"])
        else:
            raise ValueError("unknown param type %r" % t)
    return out


def random_params(dists, rng):
    """A uniform draw from dists (log-uniform for log ones), for pre-filling."""
    ps = {}
    for name, d in dists.items():
        if isinstance(d, CategoricalDistribution):
            ps[name] = d.choices[rng.integers(len(d.choices))]
        elif isinstance(d, IntDistribution):
            if d.log:
                v = int(round(math.exp(rng.uniform(math.log(d.low), math.log(d.high)))))
            else:
                v = d.low + d.step * int(rng.integers((d.high - d.low) // d.step + 1))
            ps[name] = min(max(v, d.low), d.high)
        else:
            if d.log:
                v = math.exp(rng.uniform(math.log(d.low), math.log(d.high)))
            elif d.step is not None:
                v = d.low + d.step * int(rng.integers(round((d.high - d.low) / d.step) + 1))
            else:
                v = rng.uniform(d.low, d.high)
            ps[name] = min(max(v, d.low), d.high)
    return ps


def latency(msg):
    dists = distributions(msg["space"])
    rng = np.random.default_rng(msg.get("seed", 1))
    study = optuna.create_study(
        direction="minimize", sampler=make_sampler("tpe", msg.get("seed", 1))
    )
    trials = []
    for _ in range(msg["history"]):
        trials.append(
            optuna.trial.create_trial(
                params=random_params(dists, rng),
                distributions=dists,
                value=float(rng.random()),
            )
        )
    study.add_trials(trials)
    times = []
    for _ in range(msg["reps"]):
        t0 = time.perf_counter()
        trial = study.ask(dists)
        times.append((time.perf_counter() - t0) * 1e3)
        # Failed trials are invisible to TPE: the history stays the same.
        study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return {"median_ms": float(np.median(times)), "all_ms": times}


def main():
    studies = {}
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
            op = msg["op"]
            if op == "new" and "directions" in msg:
                # Several objectives (`tuners multi`): Optuna's own
                # multi-objective samplers with their 3.1 defaults.
                study = optuna.create_study(
                    directions=msg["directions"],
                    sampler=make_multi_sampler(msg["sampler"], msg["seed"]),
                )
                studies[msg["id"]] = (study, distributions(msg["space"]), {})
                resp = {"ok": True}
            elif op == "new":
                study = optuna.create_study(
                    direction="minimize",
                    sampler=make_sampler(
                        msg["sampler"], msg["seed"], msg.get("constant_liar", False)
                    ),
                )
                studies[msg["id"]] = (study, distributions(msg["space"]), {})
                resp = {"ok": True}
            elif op == "ask":
                study, dists, running = studies[msg["id"]]
                trial = study.ask(dists)
                running[trial.number] = trial
                resp = {"number": trial.number, "params": trial.params}
            elif op == "tell":
                study, _, running = studies[msg["id"]]
                if "values" in msg:
                    study.tell(running.pop(msg["number"]), msg["values"])
                else:
                    study.tell(running.pop(msg["number"]), msg["value"])
                resp = {"ok": True}
            elif op == "close":
                studies.pop(msg["id"], None)
                resp = {"ok": True}
            elif op == "latency":
                resp = latency(msg)
            elif op == "version":
                resp = {"optuna": optuna.__version__}
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # answered, not fatal: the Go side reports it
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(resp) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

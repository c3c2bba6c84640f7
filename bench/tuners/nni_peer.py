#!/usr/bin/python3
"""NNI's side of trialform's tuner benchmark (bench/tuners): NNI's own
GPTuner and MetisTuner, driven through NNI's Tuner API.

NNI is not installed and its code is not part of trialform: the tuners are
loaded from a checkout of NNI's sources named by TRIALFORM_NNI_SRC (the
folder that holds nni/, e.g. what the search tool's fetch of
github:microsoft/nni gives, or `git clone https://github.com/microsoft/nni`).
Only the modules the two tuners use are executed: nni and nni.common are
created as bare packages, so NNI's package __init__ (its experiment
launcher, web UI, serializer and their dependencies, json_tricks among them)
is never run. Run with Debian's /usr/bin/python3, python3-sklearn,
python3-scipy and python3-schema.

One compatibility shim (fun_as_array, checked by peer_test.go): NNI's
gp_tuner/util.py acq_max reads `-res.fun[0]`, but SciPy >= 1.9 returns
res.fun as a float for a scalar objective; the shim wraps the minimize that
util.py imported so that res.fun is a 1-element array again.

The protocol is optuna_peer.py's (one JSON object per line):

  {"op": "new", "id": "s", "sampler": "gp"|"metis", "seed": 1,
   "space": [PARAM, ...]}                                     -> {"ok": true}
  {"op": "ask", "id": "s"}             -> {"number": 0, "params": {...}}
  {"op": "tell", "id": "s", "number": 0, "value": 1.5}       -> {"ok": true}
  {"op": "close", "id": "s"}                                 -> {"ok": true}
  {"op": "version"}                    -> {"nni": "<commit or 'source'>"}

Values are minimised (optimize_mode = "minimize"); every other class
argument is NNI's default.
"""
import json
import os
import random
import sys
import types
import warnings

import numpy as np

warnings.filterwarnings("ignore")


def fun_as_array(minimize):
    """Wraps scipy.optimize.minimize so that res.fun is a 1-element array,
    as NNI's acq_max expects (-res.fun[0])."""

    def wrapped(*args, **kwargs):
        res = minimize(*args, **kwargs)
        res.fun = np.atleast_1d(res.fun)
        return res

    return wrapped


def load_nni(src):
    if not src or not os.path.isdir(os.path.join(src, "nni", "algorithms", "hpo", "gp_tuner")):
        raise RuntimeError(
            "TRIALFORM_NNI_SRC=%r does not hold NNI's sources (nni/algorithms/hpo/gp_tuner); "
            "set it to a checkout of github.com/microsoft/nni" % src
        )
    for name in ("nni", "nni.common"):
        mod = types.ModuleType(name)
        mod.__path__ = [os.path.join(src, *name.split("."))]
        sys.modules[name] = mod
    sys.modules["nni"].common = sys.modules["nni.common"]
    import nni.utils  # noqa: E402  (NNI's own module, from src)

    sys.modules["nni"].ClassArgsValidator = nni.utils.ClassArgsValidator
    import nni.algorithms.hpo.gp_tuner.util as gp_util
    from nni.algorithms.hpo.gp_tuner import GPTuner
    from nni.algorithms.hpo.metis_tuner import MetisTuner

    gp_util.minimize = fun_as_array(gp_util.minimize)
    return {"gp": GPTuner, "metis": MetisTuner}


def nni_space(spec):
    """optuna_peer.py's PARAMs as an NNI search space."""
    out = {}
    for p in spec:
        t = p["type"]
        if t == "categorical":
            out[p["name"]] = {"_type": "choice", "_value": p["choices"]}
        elif t == "int" and p.get("log"):
            out[p["name"]] = {"_type": "qloguniform", "_value": [p["low"], p["high"], 1]}
        elif t == "int":
            out[p["name"]] = {"_type": "randint", "_value": [p["low"], p["high"] + 1]}
        elif p.get("step"):
            kind = "qloguniform" if p.get("log") else "quniform"
            out[p["name"]] = {"_type": kind, "_value": [p["low"], p["high"], p["step"]]}
        else:
            kind = "loguniform" if p.get("log") else "uniform"
            out[p["name"]] = {"_type": kind, "_value": [p["low"], p["high"]]}
    return out


def plain(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def main():
    tuners = load_nni(os.environ.get("TRIALFORM_NNI_SRC", ""))
    studies = {}
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
            op = msg["op"]
            if op == "new":
                # NNI's tuners draw from the global generators.
                random.seed(msg["seed"])
                np.random.seed(msg["seed"])
                tn = tuners[msg["sampler"]](optimize_mode="minimize")
                tn.update_search_space(nni_space(msg["space"]))
                studies[msg["id"]] = [tn, 0, {}]
                resp = {"ok": True}
            elif op == "ask":
                st = studies[msg["id"]]
                tn, n, running = st
                params = tn.generate_parameters(n)
                st[1] += 1
                running[n] = params
                resp = {"number": n, "params": {k: plain(v) for k, v in params.items()}}
            elif op == "tell":
                tn, _, running = studies[msg["id"]]
                n = msg["number"]
                tn.receive_trial_result(n, running.pop(n), msg["value"])
                resp = {"ok": True}
            elif op == "close":
                studies.pop(msg["id"], None)
                resp = {"ok": True}
            elif op == "version":
                resp = {"nni": os.environ.get("TRIALFORM_NNI_VERSION", "source")}
            else:
                raise ValueError("unknown op %r" % op)
        except Exception as e:  # answered, not fatal: the Go side reports it
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        out.write(json.dumps(resp) + "\n")
        out.flush()


if __name__ == "__main__":
    main()

"""trialform's stand-in for NNI's trial API (standard library only).

trialform puts this package first on PYTHONPATH so that unmodified NNI trial
scripts run where NNI is not installed. On import it looks for a real `nni`
on the rest of sys.path and, when it finds one, hands over to it (the
import returns the real package). Set TRIALFORM_NNI_SHIM=1 to always use the
stand-in.

The stand-in speaks NNI's trial protocol exactly: it reads
$NNI_SYS_DIR/parameter.cfg and appends "ME" records to
$NNI_SYS_DIR/.nni/metrics when NNI_PLATFORM is "local", prints
NNISDK_MEb'...' lines on other platforms, and only logs results when
NNI_PLATFORM is unset (NNI's standalone mode).
"""

import os as _os
import sys as _sys


def _hand_over_to_real_nni():
    if _os.environ.get("TRIALFORM_NNI_SHIM") == "1":
        return None
    import importlib.machinery
    import importlib.util

    here = _os.path.realpath(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
    paths = []
    for p in _sys.path:
        try:
            if _os.path.realpath(p or ".") == here:
                continue
        except (OSError, ValueError):
            continue
        paths.append(p)
    spec = importlib.machinery.PathFinder.find_spec("nni", paths)
    if spec is None or spec.loader is None:
        return None
    me = _sys.modules.get(__name__)
    before = set(_sys.modules)
    real = importlib.util.module_from_spec(spec)
    _sys.modules["nni"] = real
    try:
        spec.loader.exec_module(real)
    except Exception as e:  # a broken install: keep the stand-in
        for name in set(_sys.modules) - before:
            if name == "nni" or name.startswith("nni."):
                del _sys.modules[name]
        _sys.modules["nni"] = me
        _sys.stderr.write("trialform: the installed nni (%s) failed to import (%s); using trialform's stand-in\n"
                          % (spec.origin, e))
        return None
    return real


_real = _hand_over_to_real_nni()

import json as _json
import logging as _logging
import time as _time

__all__ = [
    "get_next_parameter",
    "get_next_parameters",
    "get_current_parameter",
    "report_intermediate_result",
    "report_final_result",
    "get_experiment_id",
    "get_trial_id",
    "get_sequence_id",
]

__version__ = "0.0+trialform"

_platform = _os.environ.get("NNI_PLATFORM")
_sysdir = _os.environ.get("NNI_SYS_DIR", "")
_logger = _logging.getLogger("nni")

_params = None
_param_index = 0
_intermediate_seq = 0
_metric_file = None


def _plain(o):
    if hasattr(o, "item"):
        try:
            return o.item()
        except (TypeError, ValueError):
            pass
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError("Object of type %s is not JSON serializable" % type(o).__name__)


def _dump(obj):
    # NNI serializes with json_tricks, allow_nan=True: same text as json.dumps.
    return _json.dumps(obj, allow_nan=True, default=_plain)


def _load_parameters():
    if _platform is None:
        return {"parameter_id": None, "parameters": {}}
    path = _os.path.join(_sysdir, "parameter.cfg")
    try:
        with open(path, "r", encoding="utf-8") as f:
            params = _json.load(f)
    except OSError as e:
        raise RuntimeError("nni (trialform stand-in): cannot read the trial parameters: %s" % e)
    if not isinstance(params, dict) or "parameters" not in params:
        raise RuntimeError("nni (trialform stand-in): %s is not a parameter record" % path)
    return params


def get_next_parameter():
    """Return the hyperparameters of this trial (a dict); None when called again."""
    global _params, _param_index
    if _param_index > 0:
        return None
    if _platform is None:
        _logger.warning("Running NNI code without runtime (trialform stand-in): parameters are {}")
    _params = _load_parameters()
    _param_index += 1
    return _params["parameters"]


def get_next_parameters():
    """Alias of get_next_parameter."""
    return get_next_parameter()


def get_current_parameter(tag=None):
    if _params is None:
        return None
    if tag is None:
        return _params["parameters"]
    return _params["parameters"][tag]


def get_experiment_id():
    return _os.environ.get("NNI_EXP_ID", "STANDALONE") if _platform is not None else "STANDALONE"


def get_trial_id():
    return _os.environ.get("NNI_TRIAL_JOB_ID", "STANDALONE") if _platform is not None else "STANDALONE"


def get_sequence_id():
    return int(_os.environ.get("NNI_TRIAL_SEQ_ID", "0")) if _platform is not None else 0


def _parameter_id():
    global _params
    if _params is None and _platform is not None:
        # NNI asserts here; reading the record is friendlier and equivalent.
        _params = _load_parameters()
    return _params["parameter_id"] if _params else None


def _send(string):
    global _metric_file
    if _platform is None:
        rec = _json.loads(string)
        if rec["type"] == "FINAL":
            _logger.info("Final result: %s", rec["value"])
        else:
            _logger.info("Intermediate result: %s  (Index %s)", rec["value"], rec["sequence"])
        return
    if _platform != "local":
        assert len(string) < 1000000, "Metric too long"
        print("NNISDK_MEb'%s'" % (string,), flush=True)
        return
    data = (string + "\n").encode("utf8")
    assert len(data) < 1000000, "Metric too long"
    if _metric_file is None:
        d = _os.path.join(_sysdir, ".nni")
        _os.makedirs(d, exist_ok=True)
        _metric_file = open(_os.path.join(d, "metrics"), "ab")
    _metric_file.write(b"ME%06d%b" % (len(data), data))
    _metric_file.flush()


def _report(type_, sequence, metric):
    _send(_dump({
        "parameter_id": _parameter_id(),
        "trial_job_id": _os.environ.get("NNI_TRIAL_JOB_ID", "STANDALONE"),
        "type": type_,
        "sequence": sequence,
        "value": _dump(metric),
        # trialform's extension: when it was reported (NNI's manager
        # stamps a result when it receives it; trialform reads results
        # later, so the trial says when).
        "time": _time.time(),
    }))


def report_intermediate_result(metric):
    """Report an intermediate result: a number, or a dict whose "default" is one."""
    global _intermediate_seq
    _report("PERIODICAL", _intermediate_seq, metric)
    _intermediate_seq += 1


def report_final_result(metric):
    """Report the final result: a number, or a dict whose "default" is one."""
    _report("FINAL", 0, metric)


if _real is not None:
    # The import statement returns sys.modules["nni"], the real package.
    del _real

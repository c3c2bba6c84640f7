"""trialform's trial helper (standard library only).

    import trialform
    params = trialform.get_params()          # {"lr": 0.01, ...}
    trialform.report_intermediate({"loss": 0.3})
    trialform.report(0.93)                   # or {"default": 0.93, "loss": 0.1}

Results are printed on stdout as single lines, which the platform reads:

    trialform: intermediate {"loss": 0.3}
    trialform: 0.93

A result is a number or a dict of numbers; the experiment's objective
metric names the key ("default" for a plain number). NaN and infinities
are allowed and read as "no value".
"""

import json
import os
import sys

__all__ = ["get_params", "report", "report_intermediate", "get_trial_id", "get_experiment", "output_dir"]


def get_params():
    """Return this trial's parameters as a dict.

    Read from the file TRIALFORM_PARAMS names, else from NNI's
    $NNI_SYS_DIR/parameter.cfg; {} when run outside trialform.
    """
    path = os.environ.get("TRIALFORM_PARAMS")
    if path and os.path.isfile(path):
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    sysdir = os.environ.get("NNI_SYS_DIR")
    if sysdir:
        cfg = os.path.join(sysdir, "parameter.cfg")
        if os.path.isfile(cfg):
            with open(cfg, "r", encoding="utf-8") as f:
                return json.load(f).get("parameters", {})
    return {}


def get_trial_id():
    """Return the trial id (TRIALFORM_TRIAL_ID), or "" outside trialform."""
    return os.environ.get("TRIALFORM_TRIAL_ID", "")


def get_experiment():
    """Return the experiment name (TRIALFORM_EXPERIMENT), or ""."""
    return os.environ.get("TRIALFORM_EXPERIMENT", "")


def output_dir():
    """Return the directory for checkpoints and artifacts; it is kept when a
    lost trial is resumed. "." outside trialform."""
    return os.environ.get("TRIALFORM_OUTPUT_DIR", ".")


def _plain(o):
    # numpy / torch scalars and arrays
    if hasattr(o, "item"):
        try:
            return o.item()
        except (TypeError, ValueError):
            pass
    if hasattr(o, "tolist"):
        return o.tolist()
    raise TypeError("%r is not a number" % (o,))


def _encode(value):
    if isinstance(value, (str, bytes, list, tuple)) or value is None:
        raise TypeError("trialform: a result is a number or a dict of numbers, not %r" % (value,))
    text = json.dumps(value, allow_nan=True, default=_plain)
    if "\n" in text:
        raise ValueError("trialform: result does not fit on one line")
    return text


def _emit(line):
    out = sys.stdout
    out.write(line + "\n")
    out.flush()


def report(value):
    """Report the final result (once, at the end of the trial)."""
    _emit("trialform: " + _encode(value))


def report_intermediate(value):
    """Report an intermediate result (per epoch, ...)."""
    _emit("trialform: intermediate " + _encode(value))

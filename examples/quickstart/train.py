"""A stand-in for a training script: an unmodified NNI trial.

It reads its parameters with nni.get_next_parameter(), reports a loss per
"epoch" with nni.report_intermediate_result() and the final loss with
nni.report_final_result(). trialform ships a stdlib-only `nni` module for
machines without NNI; where NNI is installed, NNI's own library is used.
"""
import argparse
import math
import time

import nni

parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", default="sgd")
args = parser.parse_args()

params = nni.get_next_parameter()
penalty = {"sgd": 0.6, "adam": 0.0, "rmsprop": 0.25}[args.optimizer]

# The best parameters: x = 1.5, lr = 0.01, adam, 3 layers, 128 units.
loss = (
    (params["x"] - 1.5) ** 2
    + (math.log10(params["lr"]) + 2) ** 2
    + penalty
    + 0.2 * abs(params["layers"] - 3)
    + abs(params["units"] - 128) / 128
)

print(f"params: {params}, optimizer {args.optimizer}", flush=True)
for epoch in range(1, 6):
    time.sleep(0.05)  # "training"
    value = loss * (1 + 1.0 / epoch)
    print(f"epoch {epoch}: loss {value:.4f}", flush=True)  # what `trialform logs` shows
    nni.report_intermediate_result(value)

print(f"final loss {loss:.4f}", flush=True)
nni.report_final_result(loss)

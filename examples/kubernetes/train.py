"""An unmodified NNI trial script, run as a Kubernetes Job.

On Kubernetes NNI_PLATFORM is "kubernetes", so NNI (or trialform's
stdlib-only stand-in) prints its results as NNISDK_MEb'...' lines on stdout;
trialform reads them from the pod log.
"""
import argparse
import math
import time

import nni

parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", default="sgd")
args = parser.parse_args()

params = nni.get_next_parameter()
penalty = {"sgd": 0.5, "adam": 0.0}[args.optimizer]
loss = (params["x"] - 1.5) ** 2 + (math.log10(params["lr"]) + 2) ** 2 + penalty

for epoch in range(1, 4):
    time.sleep(0.1)  # "training"
    nni.report_intermediate_result(loss * (1 + 1.0 / epoch))

nni.report_final_result(loss)
print("trained with", args.optimizer)

"""An NNI trial script run by every replica of a TFJob.

Each pod sees the trial's parameters (nni.get_next_parameter) and
NNI_PLATFORM "kubeflow"; only worker 0's results count (a TFJob without a
chief), so the other replicas may report or not. The ps here only waits
to be cleaned up: the operator deletes running pods once the job ends.
"""
import argparse
import json
import math
import os
import time

import nni

parser = argparse.ArgumentParser()
parser.add_argument("--role", default="worker")
args = parser.parse_args()

params = nni.get_next_parameter()
if args.role == "ps":
    print("parameter server up for", params)
    time.sleep(3600)

loss = (params["x"] - 1.5) ** 2 + (math.log10(params["lr"]) + 2) ** 2
for epoch in range(1, 4):
    time.sleep(0.1)  # "training"
    nni.report_intermediate_result(loss * (1 + 1.0 / epoch))
nni.report_final_result(loss)
print("trained on", os.environ.get("HOSTNAME", "?"))
# The operator tells every replica its place in the cluster (TF_CONFIG).
print("TF_CONFIG task", json.loads(os.environ.get("TF_CONFIG", "{}")).get("task"))

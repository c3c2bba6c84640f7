"""An unmodified NNI trial: parameters from nni.get_next_parameter(), a loss
per "epoch" to nni.report_intermediate_result(), the final loss to
nni.report_final_result(). On the remote machine it finds trialform's
stdlib-only `nni` module on PYTHONPATH (or NNI's own, where installed).
"""
import argparse
import math
import socket
import time

import nni

parser = argparse.ArgumentParser()
parser.add_argument("--batch", type=int, default=32)
args = parser.parse_args()

params = nni.get_next_parameter()
print("running on", socket.gethostname(), "with", params, flush=True)

# Best near lr = 0.01, momentum = 0.9, batch 32.
loss = (math.log10(params["lr"]) + 2) ** 2 + (params["momentum"] - 0.9) ** 2 + abs(math.log2(args.batch) - 5) * 0.1
for epoch in range(1, 4):
    time.sleep(0.05)  # "training"
    nni.report_intermediate_result(loss * (1 + 1.0 / epoch))
nni.report_final_result(loss)

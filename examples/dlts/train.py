"""An unmodified NNI trial: parameters from nni.get_next_parameter(), a loss
per "epoch" to nni.report_intermediate_result(), the final loss to
nni.report_final_result(). In the DLTS job NNI_PLATFORM is "dlts", so the
nni module prints its results on stdout, where trialform reads them.
"""
import math
import time

import nni

params = nni.get_next_parameter()
print("training with", params, flush=True)

# Best near lr = 0.01, momentum = 0.9.
loss = (math.log10(params["lr"]) + 2) ** 2 + (params["momentum"] - 0.9) ** 2
for epoch in range(1, 4):
    time.sleep(0.05)  # "training"
    nni.report_intermediate_result(loss * (1 + 1.0 / epoch))
nni.report_final_result(loss)

"""An NNI trial script run as an Azure ML command job.

It sees its parameters through the datastore mount (nni.get_next_parameter
reads parameter.cfg) and NNI_PLATFORM "aml", so the nni module prints its
results on stdout, which trialform reads back from the run's std_log.txt.
"""
import math
import time

import nni

params = nni.get_next_parameter()
loss = (params["x"] - 1.5) ** 2 + (math.log10(params["lr"]) + 2) ** 2
for epoch in range(1, 4):
    time.sleep(0.1)  # "training"
    nni.report_intermediate_result(loss * (1 + 1.0 / epoch))
nni.report_final_result(loss)
print("trained with", params, flush=True)

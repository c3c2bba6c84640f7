"""An NNI trial script for the dlc example.

It stands in for NNI's mnist-pytorch (which needs torch and the MNIST
data on the NAS): it reads the trial's parameters with
nni.get_next_parameter, reports three intermediate accuracies and a final
one. In a DLC container NNI_PLATFORM is "dlc", so the NNI library prints
the results on stdout (NNISDK_MEb lines), where trialform reads them from
the pod's log. Replace it with mnist.py and the same search space for
real training.
"""
import math

import nni

params = nni.get_next_parameter()
lr = float(params["lr"])
momentum = float(params["momentum"])
acc = 0.0
for epoch in range(3):
    acc = (1 - abs(math.log10(lr) + 2) / 4) * (0.5 + momentum / 2) * (epoch + 1) / 3
    nni.report_intermediate_result(acc)
nni.report_final_result(acc)
print("done", params)

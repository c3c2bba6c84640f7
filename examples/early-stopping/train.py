"""A stand-in for a training run whose learning curves cross: an unmodified
NNI trial that reports an accuracy per epoch.

A high learning rate learns fast and plateaus low; a low one is still far
from its plateau at the last epoch; the best final accuracy is at
lr ~ 0.03-0.1 and x ~ 0.7, and those runs trail the fast ones for the
first epochs. The curve is the one of `go run ./bench/earlystop`, with the
same N(0, 0.01) noise on every value.
"""
import math
import os
import random
import time

import nni

EPOCHS = int(os.environ.get("EPOCHS", "50"))
EPOCH_SECONDS = float(os.environ.get("EPOCH_SECONDS", "0.05"))

params = nni.get_next_parameter()
x, lr = params["x"], params["lr"]
plateau = 1 - 1.5 * (x - 0.7) ** 2 - 0.12 * math.log10(lr / 1e-3)
tau = 0.8 * lr ** -0.6
noise = random.Random(os.environ.get("NNI_TRIAL_JOB_ID", ""))

acc = 0.0
for epoch in range(1, EPOCHS + 1):
    time.sleep(EPOCH_SECONDS)  # "training"
    acc = plateau * (1 - 0.5 * math.exp(-epoch / tau) - 0.5 / (1 + epoch / (4 * tau)))
    acc += noise.gauss(0, 0.01)
    nni.report_intermediate_result(acc)

nni.report_final_result(acc)

#!/usr/bin/python3
"""The svm-digits objective of trialform's tuner benchmark (bench/tuners).

Reads one JSON object of params per line ({"C": ..., "gamma": ...}) and
answers {"value": error} with the 3-fold cross-validated error of an RBF
SVM on the first 450 images of scikit-learn's bundled digits set (pixels
scaled to [0, 1]; fold k holds the images whose index is k mod 3). Nothing
is cached between evaluations: every tuner pays the same for each trial.
"""
import json
import sys
import warnings

import numpy as np
from sklearn.datasets import load_digits
from sklearn.svm import SVC

warnings.filterwarnings("ignore")
N = 450


def main():
    x, y = load_digits(return_X_y=True)
    x, y = x[:N] / 16.0, y[:N]
    folds = [np.arange(N) % 3 == k for k in range(3)]
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            p = json.loads(line)
            err = 0.0
            for test in folds:
                m = SVC(C=float(p["C"]), gamma=float(p["gamma"]), kernel="rbf")
                m.fit(x[~test], y[~test])
                err += float(np.mean(m.predict(x[test]) != y[test]))
            resp = {"value": err / 3}
        except Exception as e:
            resp = {"error": "%s: %s" % (type(e).__name__, e)}
        sys.stdout.write(json.dumps(resp) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()

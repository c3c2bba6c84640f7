"""SVM on scikit-learn's digits data set, reporting with trialform's helper.

Uses trialform.py (stdlib only, on PYTHONPATH for every trial): the final
result is a dict whose "accuracy" key is the objective.
"""
import argparse

from sklearn.datasets import load_digits
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC

import trialform

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, required=True)
parser.add_argument("--gamma", type=float, required=True)
parser.add_argument("--kernel", required=True)
args = parser.parse_args()

X, y = load_digits(return_X_y=True)
model = SVC(C=args.C, gamma=args.gamma, kernel=args.kernel)
scores = cross_val_score(model, X, y, cv=3)
for fold, s in enumerate(scores):
    trialform.report_intermediate({"accuracy": float(s), "fold": fold})
trialform.report({"accuracy": float(scores.mean()), "std": float(scores.std())})

# Reads trials as JSON on stdin, prints Optuna's fANOVA importances as JSON.
# Run by importance_test.go with Debian's /usr/bin/python3 (python3-optuna).
import json
import sys

import optuna

optuna.logging.set_verbosity(optuna.logging.WARNING)
data = json.load(sys.stdin)
dists = {
    "x": optuna.distributions.FloatDistribution(-1, 1),
    "y": optuna.distributions.FloatDistribution(1e-3, 1, log=True),
    "c": optuna.distributions.CategoricalDistribution(["a", "b", "c"]),
    "z": optuna.distributions.FloatDistribution(0, 10),
}
study = optuna.create_study()
for t in data:
    study.add_trial(optuna.trial.create_trial(params=t["params"], distributions=dists, value=t["value"]))
imp = optuna.importance.get_param_importances(
    study, evaluator=optuna.importance.FanovaImportanceEvaluator(seed=0))
json.dump([[k, v] for k, v in imp.items()], sys.stdout)

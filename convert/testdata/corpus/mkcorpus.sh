set -e
NNI=/work/.mirror/microsoft+nni/repo; KAT=/work/.mirror/kubeflow+katib/repo; PX=/work/.mirror/polyaxon+polyaxon-examples/repo
NC=$(git -C $NNI rev-parse HEAD); KC=$(git -C $KAT rev-parse HEAD); PC=$(git -C $PX rev-parse HEAD); PV0=dce2853117f387315f8bcfbc06aa7c5353df9bab^
PV0C=$(git -C $PX rev-parse $PV0)
out=SOURCES.md
printf '# Corpus sources\n\nEvery file here is a data file (an experiment definition or a search space) copied unchanged\nfrom a public repository, as a test input for `trialform convert`. No code is copied.\n\n| file | repository | commit | path | licence |\n|---|---|---|---|---|\n' > $out
add() { # tool name repo dir commit path dest
  local repo=$1 dir=$2 commit=$3 path=$4 dest=$5 lic=$6
  mkdir -p $(dirname $dest); git -C $dir show $commit:$path > $dest
  echo "| $dest | $repo | ${commit:0:12} | $path | $lic |" >> $out
}
nni() { # example config [space]
  local ex=$1 cfg=$2 d=nni/$(echo $1 | tr '/' '_')_${2%.*}
  add microsoft/nni $NNI $NC examples/trials/$ex/$cfg $d/$cfg MIT
  local sp=$(git -C $NNI show $NC:examples/trials/$ex/$cfg | grep -E "^(searchSpaceFile|searchSpacePath):" | awk '{print $2}' | tr -d '\r')
  if [ -n "$sp" ]; then add microsoft/nni $NNI $NC examples/trials/$ex/$sp $d/$sp MIT; fi
}
nni mnist-pytorch config.yml
nni mnist-pytorch config_detailed.yml
nni mnist-pytorch config_assessor.yml
nni mnist-pytorch config_remote.yml
nni mnist-pytorch config_kubeflow.yml
nni mnist-pytorch config_frameworkcontroller.yml

nni mnist-pytorch config_openpai.yml
nni mnist-pytorch config_aml.yml
nni mnist-pytorch config_dlc.yml
nni mnist-pytorch config_hybrid.yml
nni mnist-pytorch config_adl.yml
nni mnist-tfv1 config.yml
nni mnist-tfv1 config_dlts.yml
nni mnist-tfv1 config_pai.yml
nni mnist-tfv1 config_aml.yml
nni mnist-tfv1 config_assessor.yml
nni mnist-tfv1 config_kubeflow.yml
nni mnist-tfv1 config_frameworkcontroller.yml
nni mnist-tfv1 config_hybrid_v2.yml
nni mnist-tfv2 config_remote.yml
# nni/mnist-tfv2_config_hybrid/config_hybrid.yml was added later from microsoft/nni 9737acbfcd87 (see SOURCES.md):
# the same path at that commit; its search_space.json is the one above.
nni mnist-advisor config_bohb.yml
nni mnist-advisor config_hyperband.yml
nni mnist-batch-tune-keras config.yml
nni mnist-nested-search-space config.yml
nni mnist-pbt-tuner-pytorch config.yml
nni auto-gbdt config_metis.yml
nni systems_auto_tuning/rocksdb-fillrandom config_smac.yml
nni sklearn/classification config.yml
nni mnist-keras config.yml
nni mnist-distributed-pytorch config_kubeflow.yml
nni mnist-distributed-tfv1 config_kubeflow.yml
nni cifar10_pytorch config_adl.yml
nni benchmarking/hyperband config_hyperband.yml
for f in hp-tuning/random hp-tuning/grid hp-tuning/tpe hp-tuning/multivariate-tpe hp-tuning/cma-es hp-tuning/hyperband hp-tuning/bayesian-optimization hp-tuning/sobol hp-tuning/optuna-distribution hp-tuning/hyperopt-distribution hp-tuning/simple-pbt early-stopping/median-stop kubeflow-training-operator/pytorchjob-mnist kubeflow-training-operator/tfjob-mnist-with-summaries metrics-collector/file-metrics-collector trial-template/trial-metadata-substitution resume-experiment/long-running-resume; do
  add kubeflow/katib $KAT $KC examples/v1beta1/$f.yaml katib/$(echo $f | tr '/' '_').yaml Apache-2.0
done
for f in keras/mnist/polyaxonfile_hyperparams.yml pytorch/mnist/polyaxonfile_hyperparams.yml tensorflow/cifar10/polyaxonfile_hyperparams.yml xgboost/iris/polyaxonfile_hyperparams.yml tensorflow/cifar10/polyaxonfile_gpu.yml mxnet/mnist/polyaxonfile_hyperparams.yml; do
  add polyaxon/polyaxon-examples $PX $PV0C in_cluster/$f polyaxon/v0_$(echo ${f%.yml} | tr '/' '_').yml Apache-2.0
done
for ex in keras/mnist; do
  d=polyaxon/v1_$(echo $ex | tr '/' '_')
  for f in polyaxonfile.yml polyaxonfile_hyperparams_grid.yml polyaxonfile_hyperparams_random.yml polyaxonfile_hyperparams_mapping.yml; do
    add polyaxon/polyaxon-examples $PX $PC in_cluster/$ex/$f $d/$f Apache-2.0
  done
done
add polyaxon/polyaxon-examples $PX $PC in_cluster/kubeflow/tfjob/polyaxonfile.yaml polyaxon/v1_kubeflow_tfjob/polyaxonfile.yaml Apache-2.0
add polyaxon/polyaxon-examples $PX $PC in_cluster/sklearn/iris/polyaxonfile.yml polyaxon/v1_sklearn_iris/polyaxonfile.yml Apache-2.0

# Eight trials of an unmodified NNI trial script as Azure Machine Learning
# command jobs on a compute cluster, tuned with TPE: NNI's aml mode.
#   export TRIALFORM_VAR_client_secret=...   # or leave it empty: DefaultAzureCredential
#   trialform apply -auto-approve -wait -var subscription_id=... -var workspace_name=...
#   trialform trials aml-demo
# Code and parameters go through the workspace datastore mounted here at
# var.mount (e.g. with blobfuse2); each job mounts it too.

variable "subscription_id" {
  type        = string
  description = "The workspace's subscription id (az account show --query id)."
}

variable "resource_group" {
  default     = "rg-ml"
  description = "The workspace's resource group."
}

variable "workspace_name" {
  default     = "ws1"
  description = "The Azure Machine Learning workspace."
}

variable "compute_target" {
  default     = "cpu-cluster"
  description = "The workspace's compute cluster."
}

variable "datastore" {
  default     = "trialstore"
  description = "The datastore (a blob container) holding the shared storage."
}

variable "mount" {
  default     = "/mnt/trialstore"
  description = "Where that datastore is mounted on this machine (blobfuse2 mount /mnt/trialstore ...)."
}

variable "container_mount" {
  default     = "/mnt/trialstore"
  description = "Where each job sees the datastore (trialform links it there)."
}

variable "tenant_id" {
  type        = string
  default     = ""
  description = "The service principal's tenant (with client_id and client_secret)."
}

variable "client_id" {
  type        = string
  default     = ""
  description = "The service principal's application id."
}

variable "client_secret" {
  default     = ""
  sensitive   = true
  description = "The service principal's secret; empty: DefaultAzureCredential (AZURE_* variables, managed identity, az login)."
}

variable "arm_endpoint" {
  default     = "https://management.azure.com"
  description = "Azure Resource Manager (another cloud's, or a test fake's)."
}

variable "authority_host" {
  default     = "https://login.microsoftonline.com/"
  description = "Microsoft Entra ID (another cloud's, or a test fake's)."
}

variable "artifact_endpoint" {
  default     = ""
  description = "The workspace's artifact service; empty: https://LOCATION.api.azureml.ms."
}

platform "aml" "ws" {
  subscription_id               = var.subscription_id
  resource_group                = var.resource_group
  workspace_name                = var.workspace_name
  compute_target                = var.compute_target
  image                         = "msranni/nni:latest"
  datastore                     = var.datastore
  tenant_id                     = var.tenant_id
  client_id                     = var.client_id
  client_secret                 = var.client_secret
  endpoint                      = var.arm_endpoint
  authority_host                = var.authority_host
  artifact_endpoint             = var.artifact_endpoint
  local_storage_mount_point     = var.mount
  container_storage_mount_point = var.container_mount
}

search_space "aml-demo" {
  param "lr" { loguniform = [0.0001, 0.1] }
  param "x" { uniform = [0, 3] }
}

experiment "aml-demo" {
  platform     = platform.aml.ws
  search_space = search_space.aml-demo
  tuner "tpe" {}
  max_trials  = 8
  concurrency = 4
  objective {
    metric = "default"
    goal   = "minimize"
  }
  trial {
    command = "python3 train.py"
  }
}

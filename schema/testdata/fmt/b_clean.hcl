locals {
  python = "python3"
}

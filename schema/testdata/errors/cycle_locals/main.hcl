locals {
  a = "${local.b}-a"
  b = "${local.c}-b"
  c = local.a
}

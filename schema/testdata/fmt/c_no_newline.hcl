locals {
x=1
}
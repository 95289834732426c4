"""The lessons' kernels, one module per topic, numbered in teaching order inside each module."""

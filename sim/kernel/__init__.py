"""A compiled kernel for the synthetic study path (numba, an optional extra: ``prunesim[kernel]``)."""

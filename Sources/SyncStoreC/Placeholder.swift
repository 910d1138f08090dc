// C ABI entry points.

"""The `layout` dialect and the pure-Python CuTe layout algebra."""

"""The `tile` dialect: tensors, copies, MMAs, pipelines."""

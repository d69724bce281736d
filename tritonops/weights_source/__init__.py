"""What names a model's weights, below planning and the weights operation that both use it:

    source.py     where weights come from (Hugging Face, ModelScope, a host path, a controller folder)
                  and the model id derived from it (pure)
    manifest.py   the manifest of sizes and SHA-256 that decides what is already there (pure)
    local.py      a folder on the controller: its files and their manifest (reads this machine's disk)
"""

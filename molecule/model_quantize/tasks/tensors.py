# Run by verify.yml with the backends' venv python on the node: what the quantized tensors of an output hold.
# Prints JSON: per tensor name, its dtype and whether any value is non-zero, for the names matching argv[2:].
import glob
import json
import sys

from safetensors import safe_open

out, patterns = sys.argv[1], sys.argv[2:]
found = {}
for path in sorted(glob.glob(out + '/*.safetensors')):
    with safe_open(path, 'pt') as tensors:
        for name in tensors.keys():
            if any(name.endswith(pattern) for pattern in patterns):
                tensor = tensors.get_tensor(name)
                found[name] = {'dtype': str(tensor.dtype).replace('torch.', ''), 'nonzero': bool(tensor.any())}
print(json.dumps(found))

"""What a secret looks like in a name: the one rule the redactor, the vLLM spec and the
llama-server checks share. Stdlib only.

A name is a secret's when its last part (or the whole of it) is a key word: api_key, token,
secret, password, ... (--api-key, --hf-token, HF_TOKEN, VLLM_API_KEY). A name ending in a part
that says what kind of thing it is (--api-key-file, api_key_path, --max-tokens) is not.
"""

from __future__ import annotations

import re

KEYWORD = r"(?:api[_-]?key|token|secret|password|passwd|passphrase|credentials?)"
# A command-line flag that carries a secret as its value: --api-key, --api_key, --hf-token, ...
FLAG = rf"--(?:[a-z0-9]+[-_])*{KEYWORD}(?![\w-])"
_FLAG_ONLY = re.compile(rf"(?i){FLAG}$")


def secret_flag(arg: str) -> bool:
    """Whether ARG (a flag, or --flag=value) passes a secret on the command line, where every
    user of the box can read it (/proc/PID/cmdline, ps, docker inspect)."""
    return bool(_FLAG_ONLY.match(arg.split("=", 1)[0]))

"""A stage's seal keeps secret inputs as HMACs with the box's own key, never plain hashes, and
nothing secret reaches Ansible's output at any verbosity."""

import json
import os

import pytest
from arcops.stages import seal

from .helpers.ansible_run import needs_ansible
from .helpers.seal_box import INPUTS, run_play

# --- Secret inputs: never hashed plainly, never logged ---------------------------------------

KEY = "sk-arcops-test-7f3a9c"


def _plain_digests(value) -> set[str]:
    """Every plain sha256 a guess could be checked against: of the value, its JSON, its lines."""
    import hashlib

    texts = {value, json.dumps(value), f"VLLM_API_KEY={value}\n", f"{value}\n"}
    return {hashlib.sha256(t.encode()).hexdigest() for t in texts}


def test_secrets_are_kept_as_hmacs_with_the_boxs_own_key(box):
    states, etc, witness = box
    state = states / "vllm_service"
    key_file = etc / "api-key.env"
    key_file.write_text(f"VLLM_API_KEY={KEY}\n")
    key_file.chmod(0o600)
    witness = {**witness, "secret_files": [str(key_file)]}
    secrets = {"vllm_service_api_key": KEY, "unset_key": ""}
    key = seal.box_key(str(state), create=True)
    made = seal.make(INPUTS, witness, secrets, key)
    seal.write(str(state), made)
    text = (state / seal.SEAL_FILE).read_text()
    assert KEY not in text and not any(d in text for d in _plain_digests(KEY))
    assert sorted(made["secrets"]) == ["vllm_service_api_key"]  # an unset key is no secret
    assert made["witness"]["secret_files"][str(key_file)].startswith("hmac:")
    # Root's alone: the key, the seal and the folders up to the seals' folder.
    assert os.stat(seal.key_path(str(state))).st_mode & 0o777 == 0o600
    assert os.stat(state / seal.SEAL_FILE).st_mode & 0o777 == 0o600
    assert os.stat(state).st_mode & 0o777 == 0o700
    # Another box (another key) makes other HMACs for the same key.
    other = seal.make(INPUTS, witness, secrets, os.urandom(32))
    assert other["secrets"] != made["secrets"]
    assert seal.check(str(state), INPUTS, secrets) == []
    assert seal.check(str(state), INPUTS, {"vllm_service_api_key": "sk-rotated-000000"}) == [
        "secret inputs differ from the sealed run: vllm_service_api_key"
    ]
    assert seal.check(str(state), INPUTS, {}) == [
        "secret inputs differ from the sealed run: vllm_service_api_key"
    ]
    key_file.write_text("VLLM_API_KEY=sk-rotated-000000\n")
    drift = seal.check(str(state), INPUTS, secrets)
    assert len(drift) == 1 and drift[0].startswith(f"secret_files {key_file}: hmac:")
    assert KEY not in drift[0]
    # The key gone: nothing can be matched, so the stage runs in full (and seals with a new key).
    key_file.write_text(f"VLLM_API_KEY={KEY}\n")
    seal.key_path(str(state)).unlink()
    assert seal.check(str(state), INPUTS, secrets) == [
        "secret inputs differ from the sealed run: vllm_service_api_key"
    ]


def test_a_survey_carries_the_secrets_names_only(box):
    states, _, witness = box
    state = states / "vllm_service"
    secrets = {"vllm_service_api_key": KEY}
    seal.write(str(state), seal.make(INPUTS, witness, secrets, seal.box_key(str(state), create=True)))
    surveyed = seal.survey(str(states))
    assert surveyed["seals"][str(state)]["secrets"] == ["vllm_service_api_key"]
    assert KEY not in json.dumps(surveyed) and not any(d in json.dumps(surveyed) for d in _plain_digests(KEY))
    # Same names: the survey has nothing against it (the box is asked for the values).
    assert seal.check_surveyed(surveyed, str(state), INPUTS, ["vllm_service_api_key"]) == []
    assert seal.check_surveyed(surveyed, str(state), INPUTS, []) == [
        "secret inputs differ from the sealed run: vllm_service_api_key"
    ]
    assert seal.check_secrets(str(state), secrets) == []
    assert seal.check_secrets(str(state), {"vllm_service_api_key": "other-key-123"})[0].endswith(
        "vllm_service_api_key"
    )


def test_bad_secrets_are_refused_by_name():
    with pytest.raises(seal.SealError, match="secrets: must be a mapping"):
        seal.present(["a", "list"])
    with pytest.raises(seal.SealError, match="seal key is missing"):
        seal.make(INPUTS, {}, {"k": "v"}, None)


@needs_ansible
def test_no_secret_reaches_ansibles_output_at_any_verbosity(box, tmp_path):
    """Write, check on the box and check from a survey (which asks the box for the secrets only):
    the key is in no line Ansible prints, even at -vvvv, and the survey path still tells a
    rotated key from the sealed one."""
    states, _etc, witness = box
    state = states / "vllm_service"
    args = {"state_dir": str(state), "witness": witness, "secrets": {"vllm_service_api_key": KEY}}
    written, out = run_play(tmp_path, {**args, "action": "write"}, "-vvvv")
    assert written["changed"] is True and KEY not in out
    checked, out = run_play(tmp_path, {**args, "action": "check"}, "-vvvv")
    assert (checked["converged"], checked["source"]) == (True, "box") and KEY not in out
    surveyed = seal.survey(str(states))
    from_survey, out = run_play(tmp_path, {**args, "action": "check", "surveyed": surveyed}, "-vvvv")
    assert (from_survey.get("converged"), from_survey.get("source")) == (True, "survey"), json.dumps(
        from_survey
    )
    assert KEY not in out
    rotated = {**args, "secrets": {"vllm_service_api_key": "sk-rotated-424242"}, "surveyed": surveyed}
    moved, out = run_play(tmp_path, {**rotated, "action": "check"}, "-vvvv")
    assert moved["converged"] is False and moved["source"] == "survey"
    assert moved["reasons"] == ["secret inputs differ from the sealed run: vllm_service_api_key"]
    assert "sk-rotated-424242" not in out

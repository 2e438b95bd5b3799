"""Secret masking: known keys from the environment, echoed headers, log records."""

from __future__ import annotations

import json
import logging

from amc.errors import (
    known_secrets,
    mask_json,
    mask_logs,
    mask_secrets,
    register_secret_env,
)

KEY = "canary-0123456789abcdef"


def test_known_keys_and_header_values_are_masked_and_ordinary_text_is_not(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijkl")
    assert mask_secrets(f"x {KEY} y") == "x *** y"
    assert mask_secrets("token hf_abcdefghijkl") == "token ***"
    assert mask_secrets('{"h": "Authorization: Bearer other-secret-value"}') == \
        '{"h": "Authorization: Bearer ***"}'
    assert mask_secrets("api-key: zz-9876543210, x-api-key=qq-1234567890") == \
        "api-key: ***, x-api-key=***"
    assert mask_secrets("craft 4 planks using 1 oak log; abc") == \
        "craft 4 planks using 1 oak log; abc"


def test_a_short_key_is_masked_as_a_whole_token_and_json_stays_valid(monkeypatch):
    """Issue 64: every configured secret is masked whatever its length; a short one only
    where it stands alone (not inside a word), in JSON only inside string values."""
    monkeypatch.setenv("SHORT_API_KEY", "abc")
    monkeypatch.setenv("LOCAL_TOKEN", "q7")
    monkeypatch.setenv("FLAG_KEY", "1")  # a setting, not a key: never masked
    assert {"abc", "q7"} <= set(known_secrets())
    assert "1" not in known_secrets()
    assert mask_secrets("key abc; fabric abcd (q7). 1 oak") == "key ***; fabric abcd (***). 1 oak"
    record = {"abc": 1, "text": "raw abc and q7", "n": 1, "ok": True}
    masked = mask_json(json.dumps(record))
    assert json.loads(masked) == {"abc": 1, "text": "raw *** and ***", "n": 1, "ok": True}


def test_a_components_api_key_env_is_a_secret_whatever_its_name(monkeypatch):
    monkeypatch.setenv("AMC_LLM_CREDENTIAL_53", KEY)
    assert mask_secrets(KEY) == KEY  # the name does not look like a key's
    register_secret_env("AMC_LLM_CREDENTIAL_53")
    assert mask_secrets(KEY) == "***"


def test_log_records_are_masked_once_installed(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    mask_logs()
    mask_logs()  # idempotent
    with caplog.at_level(logging.WARNING, logger="amc.test"):
        logging.getLogger("amc.test").warning("answer was %s", f"Authorization: Bearer {KEY}")
    assert KEY not in caplog.text and "Authorization: Bearer ***" in caplog.text

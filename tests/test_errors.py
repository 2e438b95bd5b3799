"""Secret masking: known keys from the environment, echoed headers, log records."""

from __future__ import annotations

import logging

from amc.errors import known_secrets, mask_logs, mask_secrets, register_secret_env

KEY = "canary-0123456789abcdef"


def test_known_keys_and_header_values_are_masked_and_ordinary_text_is_not(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HF_TOKEN", "hf_abcdefghijkl")
    monkeypatch.setenv("SHORT_API_KEY", "abc")  # too short to mask without mangling text
    assert mask_secrets(f"x {KEY} y") == "x *** y"
    assert mask_secrets("token hf_abcdefghijkl") == "token ***"
    assert mask_secrets('{"h": "Authorization: Bearer other-secret-value"}') == \
        '{"h": "Authorization: Bearer ***"}'
    assert mask_secrets("api-key: zz-9876543210, x-api-key=qq-1234567890") == \
        "api-key: ***, x-api-key=***"
    assert mask_secrets("craft 4 planks using 1 oak log; abc") == \
        "craft 4 planks using 1 oak log; abc"
    assert "abc" not in known_secrets()


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

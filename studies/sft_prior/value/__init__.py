"""The value of the fine-tuned prior's chosen regime (issue 62, item 1): protocol.json declares
the candidates, data, figures and rule; see README.md."""

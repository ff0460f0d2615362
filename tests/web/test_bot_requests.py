"""A Coze bot body becomes a BotEdit (web/requests.py); the core applies it to a config."""

from __future__ import annotations

import pytest

from coze_lab.core.bots import BotConfig, BotTable
from coze_lab.core.errors import InvalidParameter
from coze_lab.web.requests import parse_bot_edit


def config_of(body: dict, base: BotConfig | None = None) -> BotConfig:
    return (base or BotConfig()).edited(parse_bot_edit(body).changes)


def test_a_create_body_round_trips_through_storage() -> None:
    config = config_of(
        {
            "prompt_info": {"prompt": "Hi {{name}}"},
            "model_info_config": {"model_id": "m", "temperature": 0.5, "context_round": 3},
            "workflow_id_list": {"ids": [{"id": "7001"}, {"id": "7001"}]},
            "plugin_id_list": {"id_list": [{"plugin_id": "7002", "api_id": "7003"}]},
            "onboarding_info": {"prologue": "Hello", "suggested_questions": ["Why?"]},
            "variables": [{"keyword": "name", "default_value": "you"}],
            "functions": [{"name": "lookup", "parameters": {"type": "object"}}],
            "suggest_reply_info": {"reply_mode": "customized", "customized_prompt": "Ask more"},
        }
    )
    assert config.workflow_ids == (7001,)  # duplicates collapse
    assert config.history_rounds == 3 and config.model_params == {"temperature": 0.5}
    assert config.variable_defaults() == {"name": "you"}
    assert (config.suggest_reply_mode, config.suggest_reply_prompt) == ("customized", "Ask more")
    assert config.response_format == "text"
    tabled = config_of({"tables": [{"table_id": "7004", "allow_writes": True}]}, config)
    assert tabled.tables == (BotTable(7004, True),)
    assert BotConfig.from_dict(tabled.to_dict()) == tabled
    assert BotConfig.from_dict(config.to_dict()) == config
    pinned = BotConfig.from_dict({**config.to_dict(), "workflow_versions": {"7001": 3}})
    assert pinned.workflow_versions == {7001: 3}
    assert BotConfig.from_dict(pinned.to_dict()) == pinned
    json_bot = config_of({"model_info_config": {"model_id": "m", "response_format": "json"}}, config)
    assert json_bot.response_format == "json" and json_bot.suggest_reply_mode == "customized"


def test_update_changes_only_the_fields_it_names() -> None:
    config = config_of({"prompt_info": {"prompt": "a"}, "variables": [{"keyword": "x"}]})
    updated = config_of({"model_info_config": {"model_id": "other"}}, config)
    assert (updated.prompt, updated.model_id, updated.variables) == (
        "a",
        "other",
        config.variables,
    )


@pytest.mark.parametrize(
    "body",
    [
        {"prompt_info": "text"},
        {"prompt_info": {"prompt": 3}},
        {"model_info_config": {"temperature": 5}},
        {"model_info_config": {"max_tokens": True}},
        {"model_info_config": {"context_round": -1}},
        {"workflow_id_list": {"ids": [{"id": "abc"}]}},
        {"plugin_id_list": {"id_list": [{"plugin_id": "1"}]}},
        {"variables": [{"keyword": "sys_user_id"}]},
        {"variables": [{"keyword": "a"}, {"keyword": "a"}]},
        {"variables": [{"keyword": "1x"}]},
        {"functions": [{"name": "bad name"}]},
        {"functions": [{"name": "f", "parameters": {"type": "string"}}]},
        {"onboarding_info": {"suggested_questions": [1]}},
        {"suggest_reply_info": {"reply_mode": "sometimes"}},
        {"suggest_reply_info": {"reply_mode": "customized"}},
        {"model_info_config": {"model_id": "m", "response_format": "yaml"}},
        {"tables": [{"table_id": "x"}]},
        {"tables": [{"table_id": "7", "allow_writes": "yes"}]},
        {"tables": [{"table_id": "7"}, {"table_id": "7"}]},
        {"tables": [{"table_id": str(i)} for i in range(1, 12)]},
        {"tables": ["7"]},
    ],
)
def test_bad_bodies_name_the_field(body: dict) -> None:
    with pytest.raises(InvalidParameter) as caught:
        parse_bot_edit(body)
    assert next(iter(body)).split("_")[0] in caught.value.msg


def test_mcp_servers_round_trip_and_bad_ones_are_400s() -> None:
    config = config_of({"mcp_servers": [{"server_id": "7005", "tools": ["add", "add"]},
                                        {"server_id": 7006}]})
    stored = BotConfig.from_dict(config.to_dict())
    assert [(m.server_id, m.tools) for m in stored.mcp_servers] == [(7005, ("add",)), (7006, ())]
    for bad in ({"mcp_servers": {}}, {"mcp_servers": [{"tools": []}]},
                {"mcp_servers": [{"server_id": "x"}]},
                {"mcp_servers": [{"server_id": "1", "tools": None}]},
                {"mcp_servers": [{"server_id": "1", "tools": [""]}]},
                {"mcp_servers": [{"server_id": "1"}, {"server_id": 1}]}):
        with pytest.raises(InvalidParameter, match="mcp_servers"):
            parse_bot_edit(bad)

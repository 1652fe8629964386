"""How tables name an audit's models (``auditapp.models.distinct_model_names``): by label or model name, with the
audit model's id only where two would share a name."""
from __future__ import annotations

from auditapp.models import AuditModel, distinct_model_names


def test_a_shared_name_gets_each_model_id_and_a_unique_one_stays_as_it_is():
    models = [AuditModel(id=4, model="llama3", label=""), AuditModel(id=9, model="llama3:8b", label="llama3"),
              AuditModel(id=2, model="qwen", label="Qwen (greedy)"), AuditModel(id=7, model="qwen", label="")]
    assert distinct_model_names(models) == {
        4: "llama3 (audit model 4)", 9: "llama3 (audit model 9)", 2: "Qwen (greedy)", 7: "qwen"}
    assert list(distinct_model_names(models)) == [4, 9, 2, 7]  # the order given
    assert distinct_model_names([]) == {}

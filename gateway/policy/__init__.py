"""The routing policy: schema, compile step, loading and hot reload."""

from gateway.policy.compile import BackendSpec, CompiledPolicy, ModelRoute, PoolSpec
from gateway.policy.loader import load_policy_file, load_policy_text, parse_policy
from gateway.schema.problems import FieldProblem, PolicyError

__all__ = [
    "BackendSpec",
    "CompiledPolicy",
    "FieldProblem",
    "ModelRoute",
    "PolicyError",
    "PoolSpec",
    "load_policy_file",
    "load_policy_text",
    "parse_policy",
]

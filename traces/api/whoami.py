"""Who the caller is: the cheapest call, for clients checking their key (nobody signed in:
no key, no user, no role; it answers only where the organization has public data)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from traces.api.auth import KeyPrincipal
from traces.api.base import OrgApi
from traces.api.schema import errors


class WhoAmIApi(OrgApi):
    class OutputSerializer(serializers.Serializer):
        organization = serializers.CharField()
        api_key = serializers.CharField(allow_null=True)
        user = serializers.CharField(allow_null=True)
        role = serializers.CharField(
            allow_null=True, help_text="viewer, member or owner; null: public data only"
        )

    @extend_schema(operation_id="whoami", responses={200: OutputSerializer, **errors()})
    def get(self, request, org):
        principal = request.user
        is_key = isinstance(principal, KeyPrincipal)
        return Response(
            {
                "organization": self.organization.slug,
                "api_key": principal.api_key.id if is_key else None,
                "user": None
                if is_key or not principal.is_authenticated
                else principal.get_username(),
                "role": self.actor.role_in(self.organization.pk),
            }
        )

"""Release gates without a broker (`mock-server gate`): pacts and spec versions checked against the spec."""

"""geo.distance: great-circle distance between two points."""

import math
from typing import Any, ClassVar, Literal

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field

EARTH_RADIUS_KM = 6371.0088


class Point(BaseModel):
    lat: float = Field(ge=-90, le=90, description="Latitude in degrees")
    lon: float = Field(ge=-180, le=180, description="Longitude in degrees")
    label: str | None = Field(default=None, description="Optional name of the place")


class DistanceInput(BaseModel):
    origin: Point
    destination: Point
    unit: Literal["km", "mi", "nmi"] = Field(default="km", description="Unit of the result")


class DistanceOutput(BaseModel):
    distance: float
    unit: str
    bearing_degrees: float


class Distance:
    description = "Great-circle (haversine) distance and initial bearing between two coordinates"
    input_schema = DistanceInput
    output_schema = DistanceOutput
    tags: ClassVar[list[str]] = ["geo", "public"]
    annotations = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        a, b = inputs["origin"], inputs["destination"]
        lat1, lon1, lat2, lon2 = map(math.radians, (a["lat"], a["lon"], b["lat"], b["lon"]))
        h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
        km = 2 * EARTH_RADIUS_KM * math.asin(math.sqrt(h))
        factor = {"km": 1.0, "mi": 0.621371, "nmi": 0.539957}[inputs.get("unit", "km")]
        y = math.sin(lon2 - lon1) * math.cos(lat2)
        x = math.cos(lat1) * math.sin(lat2) - math.sin(lat1) * math.cos(lat2) * math.cos(lon2 - lon1)
        bearing = (math.degrees(math.atan2(y, x)) + 360) % 360
        return {
            "distance": round(km * factor, 3),
            "unit": inputs.get("unit", "km"),
            "bearing_degrees": round(bearing, 1),
        }

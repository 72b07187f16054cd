"""A vision-language chat server of known behaviour, for tests only: it decodes every image of a
request with Pillow (a PNG it cannot open is a 400), counts the prompt as the tiny Qwen2-VL's
word-level tokenizer and template would (models/vision_synth.py; written out by hand here: the
prompt's words + 13 for the template, see TEMPLATE_TOKENS) plus, per image, transformers' own
`smart_resize` grid / 4 + 2 (vision start/end), and waits `base_s + s_per_image_token x image
tokens` before streaming `max_tokens` tokens with a final usage."""

from __future__ import annotations

import asyncio
import base64
import io
import json

from aiohttp import web
from threaded_app import ThreadedApp

# <|im_start|> system You are a helpful assistant. <|im_end|> (1+1+5+1) <|im_start|> user (2)
# ... <|im_end|> (1) <|im_start|> assistant (2): the words split on whitespace, one token each
TEMPLATE_TOKENS = 13


def image_tokens(width: int, height: int) -> int:
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    h, w = smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=28 * 28 * 1280)
    return (h // 28) * (w // 28) + 2


class VisionServer(ThreadedApp):
    def __init__(self, base_s: float = 0.0, s_per_image_token: float = 0.0):
        self.base_s, self.s_per_image_token = base_s, s_per_image_token
        self.sizes: list[list[tuple[int, int]]] = []    # per request: each image's (w, h)
        self.pixels: list[bytes] = []                     # every image's decoded RGB bytes
        image_tokens(28, 28)    # transformers imported now, not inside the first request's timing

    def routes(self, app: web.Application) -> None:   # lifecycle: threaded_app.py
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "vision-model"}]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        from PIL import Image

        body = await request.json()
        words, sizes = 0, []
        for m in body["messages"]:
            parts = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
            for p in parts:
                if p["type"] == "text":
                    words += len(p["text"].split())
                else:
                    head, _, data = p["image_url"]["url"].partition(",")
                    if head != "data:image/png;base64":
                        return web.json_response({"error": {"message": "not a PNG data URL"}}, status=400)
                    try:
                        img = Image.open(io.BytesIO(base64.b64decode(data)))
                        img.load()
                    except Exception as e:   # noqa: BLE001 - any undecodable image is the client's fault
                        return web.json_response({"error": {"message": f"bad image: {e}"}}, status=400)
                    sizes.append(img.size)
                    self.pixels.append(img.convert("RGB").tobytes())
        self.sizes.append(sizes)
        img_tokens = sum(image_tokens(w, h) for w, h in sizes)
        prompt = words + TEMPLATE_TOKENS + img_tokens
        n = int(body.get("max_tokens", 4))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await asyncio.sleep(self.base_s + self.s_per_image_token * img_tokens)
        for i in range(n):
            ev = {"id": "x", "choices": [{"index": 0, "delta": {"content": f" w{i + 5}"}}],
                  "usage": {"prompt_tokens": prompt, "completion_tokens": i + 1}}
            await resp.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
        final = {"id": "x", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": n}}
        await resp.write(b"data: " + json.dumps(final).encode() + b"\n\ndata: [DONE]\n\n")
        return resp

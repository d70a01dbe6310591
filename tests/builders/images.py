"""Images written by Pillow."""

import io


def picture(format_name: str, *, frames: int = 1, size: tuple[int, int] = (64, 48)) -> bytes:
    from PIL import Image

    images = [Image.new("L", size, 255 - 40 * index) for index in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, format=format_name, save_all=frames > 1, append_images=images[1:])
    return buffer.getvalue()

"""A TCP forwarder for deploy/kubernetes/play.sh: listens on ADDRESS:PORT (the pods'
bridge) and connects each connection to TARGET_HOST:TARGET_PORT (the host's PostgreSQL
on loopback), copying both ways. Standard library only; stops with its parent.

    python3 forward.py 10.89.0.1 15432 127.0.0.1 5432
"""

import asyncio
import sys


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(host, port, target_host, target_port):
    async def accept(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(accept, host, port)
    async with server:
        await server.serve_forever()


asyncio.run(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])))

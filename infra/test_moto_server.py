"""Tests of infra/moto_server.py: AWS's limits and the faults, against the real server.

Each test talks to a moto_server.py it starts on 127.0.0.1 (a free port) through boto3, as an
AWS client would. Run with moto's venv (infra/moto.sh setup installs it):

    .venv-moto/bin/python infra/test_moto_server.py        (about 20 s)
"""

import json
import os
import socket
import subprocess
import sys
import time
import unittest
import urllib.request
import uuid

import boto3
import botocore.config
import botocore.exceptions

HERE = os.path.dirname(os.path.abspath(__file__))

KB = 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MotoServer:
    """A moto_server.py process on a free port, with `env` added to its environment."""

    def __init__(self, env=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "moto_server.py"), "-p", str(self.port)],
            env={**os.environ, **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/moto-api/data.json", timeout=1).read()
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server.py did not start: {self.process.stderr.read()}")
                time.sleep(0.1)

    def stop(self):
        self.process.terminate()
        _, stderr = self.process.communicate(timeout=10)
        return stderr

    def admin(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method="POST" if data is not None else "GET")
        with urllib.request.urlopen(request, timeout=5) as answer:
            return json.loads(answer.read())

    def client(self, service, retries=0, read_timeout=10):
        return boto3.client(
            service,
            endpoint_url=self.url,
            region_name="us-east-1",
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=botocore.config.Config(
                retries={"total_max_attempts": retries + 1, "mode": "standard"},
                read_timeout=read_timeout,
                connect_timeout=2,
            ),
        )


SERVER = None


def setUpModule():
    global SERVER
    SERVER = MotoServer()


def tearDownModule():
    SERVER.stop()


def new_table(dynamodb):
    name = f"t{uuid.uuid4().hex[:12]}"
    dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def item(pk, sk, size=0):
    return {"pk": {"S": pk}, "sk": {"S": sk}, "data": {"S": "x" * size}}


def validation_message(error):
    assert error.response["Error"]["Code"] == "ValidationException", error.response
    return error.response["Error"]["Message"]


class DynamoDbLimits(unittest.TestCase):
    """DynamoDB's limits, each answered with the error AWS gives."""

    def setUp(self):
        self.db = SERVER.client("dynamodb")
        self.table = new_table(self.db)

    def test_an_item_over_400_kb_is_refused_by_put_update_and_transaction(self):
        with self.assertRaises(botocore.exceptions.ClientError) as put:
            self.db.put_item(TableName=self.table, Item=item("p", "big", 410 * KB))
        self.assertEqual(validation_message(put.exception), "Item size has exceeded the maximum allowed size")

        self.db.put_item(TableName=self.table, Item=item("p", "grows", 300 * KB))
        with self.assertRaises(botocore.exceptions.ClientError) as update:
            self.db.update_item(
                TableName=self.table,
                Key={"pk": {"S": "p"}, "sk": {"S": "grows"}},
                UpdateExpression="SET more = :m",
                ExpressionAttributeValues={":m": {"S": "y" * 110 * KB}},
            )
        self.assertEqual(
            validation_message(update.exception), "Item size to update has exceeded the maximum allowed size"
        )

        with self.assertRaises(botocore.exceptions.ClientError) as transaction:
            self.db.transact_write_items(
                TransactItems=[{"Put": {"TableName": self.table, "Item": item("p", "big2", 410 * KB)}}]
            )
        self.assertIn("Item size has exceeded the maximum allowed size", str(transaction.exception))
        # Nothing of the refused writes landed; an item under the limit is accepted.
        self.assertNotIn("Item", self.db.get_item(TableName=self.table, Key={"pk": {"S": "p"}, "sk": {"S": "big"}}))
        self.db.put_item(TableName=self.table, Item=item("p", "fits", 390 * KB))

    def test_a_transaction_of_more_than_100_items_is_refused(self):
        actions = [{"Put": {"TableName": self.table, "Item": item("p", f"s{i}")}} for i in range(101)]
        with self.assertRaises(botocore.exceptions.ClientError) as too_many:
            self.db.transact_write_items(TransactItems=actions)
        self.assertIn("Member must have length less than or equal to 100", validation_message(too_many.exception))
        self.db.transact_write_items(TransactItems=actions[:100])

    def test_a_transaction_over_4_mb_is_refused(self):
        # Eleven items of 380 KB: each under 400 KB, 4.1 MB in all.
        actions = [{"Put": {"TableName": self.table, "Item": item("p", f"s{i}", 380 * KB)}} for i in range(11)]
        with self.assertRaises(botocore.exceptions.ClientError) as too_big:
            self.db.transact_write_items(TransactItems=actions)
        self.assertEqual(validation_message(too_big.exception), "Transaction request cannot be larger than 4 MB")
        self.assertEqual(self.db.scan(TableName=self.table)["Count"], 0, "nothing of it was written")
        self.db.transact_write_items(TransactItems=actions[:10])

    def test_a_query_page_holds_at_most_1_mb(self):
        for i in range(4):
            self.db.put_item(TableName=self.table, Item=item("p", f"s{i}", 390 * KB))
        page = self.db.query(
            TableName=self.table,
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "p"}},
        )
        self.assertEqual(len(page["Items"]), 2)
        self.assertEqual(page["LastEvaluatedKey"], {"pk": {"S": "p"}, "sk": {"S": "s1"}})

    def test_batch_get_item_takes_100_keys_and_answers_16_mb(self):
        keys = [{"pk": {"S": "p"}, "sk": {"S": f"s{i}"}} for i in range(101)]
        with self.assertRaises(botocore.exceptions.ClientError) as too_many:
            self.db.batch_get_item(RequestItems={self.table: {"Keys": keys}})
        self.assertIn("Member must have length less than or equal to 100", validation_message(too_many.exception))

        for i in range(45):
            self.db.put_item(TableName=self.table, Item=item("p", f"s{i}", 390 * KB))
        answer = self.db.batch_get_item(RequestItems={self.table: {"Keys": keys[:45]}})
        returned = len(answer["Responses"][self.table])
        unprocessed = len(answer["UnprocessedKeys"][self.table]["Keys"])
        self.assertLess(returned, 45)
        self.assertLessEqual(returned * 390 * KB, 16 * KB * KB)
        self.assertEqual(returned + unprocessed, 45)


class SqsLimits(unittest.TestCase):
    """SQS's limits, each answered with the error AWS gives."""

    def setUp(self):
        self.sqs = SERVER.client("sqs")
        self.queue = self.sqs.create_queue(QueueName=f"q{uuid.uuid4().hex[:12]}")["QueueUrl"]

    def error(self, call, **kwargs):
        with self.assertRaises(botocore.exceptions.ClientError) as refused:
            call(QueueUrl=self.queue, **kwargs)
        return refused.exception.response["Error"]

    def test_a_message_over_256_kib_is_refused(self):
        error = self.error(self.sqs.send_message, MessageBody="x" * (256 * KB + 1))
        self.assertEqual(error["Code"], "InvalidParameterValue")
        self.assertEqual(
            error["Message"],
            "One or more parameters are invalid. Reason: Message must be shorter than 262144 bytes.",
        )
        # Attributes count too.
        error = self.error(
            self.sqs.send_message,
            MessageBody="x" * (256 * KB - 10),
            MessageAttributes={"name": {"DataType": "String", "StringValue": "y" * 20}},
        )
        self.assertEqual(error["Code"], "InvalidParameterValue")
        self.sqs.send_message(QueueUrl=self.queue, MessageBody="x" * (256 * KB))

    def test_a_batch_over_256_kib_is_refused(self):
        entries = [{"Id": str(i), "MessageBody": "x" * (100 * KB)} for i in range(3)]
        error = self.error(self.sqs.send_message_batch, Entries=entries)
        self.assertIn(error["Code"], ("AWS.SimpleQueueService.BatchRequestTooLong", "BatchRequestTooLong"))
        self.assertTrue(error["Message"].startswith("Batch requests cannot be longer than 262144 bytes."))
        self.assertEqual(self.sqs.send_message_batch(QueueUrl=self.queue, Entries=entries[:2])["Successful"].__len__(), 2)

    def test_a_delay_over_15_minutes_is_refused(self):
        error = self.error(self.sqs.send_message, MessageBody="x", DelaySeconds=901)
        self.assertEqual(error["Code"], "InvalidParameterValue")
        self.assertEqual(
            error["Message"],
            "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.",
        )
        self.sqs.send_message(QueueUrl=self.queue, MessageBody="x", DelaySeconds=900)


    def test_a_fifo_message_sent_again_after_delivery_is_dropped_for_5_minutes(self):
        fifo = self.sqs.create_queue(QueueName=f"q{uuid.uuid4().hex[:12]}.fifo",
                                     Attributes={"FifoQueue": "true"})["QueueUrl"]
        send = dict(QueueUrl=fifo, MessageBody="job", MessageGroupId="g", MessageDeduplicationId="d1")
        self.sqs.send_message(**send)
        got = self.sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10)["Messages"]
        self.assertEqual(len(got), 1)
        self.sqs.delete_message(QueueUrl=fifo, ReceiptHandle=got[0]["ReceiptHandle"])
        # Sent again (a retried batch): accepted, as SQS answers, and never delivered.
        self.sqs.send_message(**send)
        self.sqs.send_message(**{**send, "MessageDeduplicationId": "d2", "MessageBody": "other"})
        got = self.sqs.receive_message(QueueUrl=fifo, MaxNumberOfMessages=10).get("Messages", [])
        self.assertEqual([m["Body"] for m in got], ["other"])


class Faults(unittest.TestCase):
    """Each kind of fault, on at a rate of 1 for that kind alone."""

    def setUp(self):
        self.db = SERVER.client("dynamodb")
        self.table = new_table(self.db)
        self.sqs = SERVER.client("sqs")
        self.queue = self.sqs.create_queue(QueueName=f"q{uuid.uuid4().hex[:12]}")["QueueUrl"]

    def tearDown(self):
        SERVER.admin("/fault-api/off", {})

    def on(self, kind, **settings):
        """Faults of `kind` on every request; returns the count of that kind so far."""
        state = SERVER.admin("/fault-api/on", {"rate": 1, "kinds": [kind], **settings})
        self.assertTrue(state["on"])
        return state["faults"][kind]

    def injected(self, kind, before):
        return SERVER.admin("/fault-api/state")["faults"][kind] - before

    def landed(self, sk):
        SERVER.admin("/fault-api/off", {})
        return "Item" in self.db.get_item(TableName=self.table, Key={"pk": {"S": "p"}, "sk": {"S": sk}})

    def test_throttles_answer_as_dynamodb_does_and_apply_nothing(self):
        for kind, code in (
            ("throttle", "ProvisionedThroughputExceededException"),
            ("throttling", "ThrottlingException"),
        ):
            before = self.on(kind)
            with self.assertRaises(botocore.exceptions.ClientError) as refused:
                self.db.put_item(TableName=self.table, Item=item("p", kind))
            self.assertEqual(refused.exception.response["Error"]["Code"], code)
            self.assertEqual(refused.exception.response["ResponseMetadata"]["HTTPStatusCode"], 400)
            self.assertEqual(self.injected(kind, before), 1)
            self.assertFalse(self.landed(kind))

    def test_a_500_applies_nothing(self):
        before = self.on("error500")
        with self.assertRaises(botocore.exceptions.ClientError) as failed:
            self.db.put_item(TableName=self.table, Item=item("p", "e"))
        self.assertEqual(failed.exception.response["Error"]["Code"], "InternalServerError")
        self.assertEqual(self.injected("error500", before), 1)
        self.assertFalse(self.landed("e"))

    def test_a_reset_before_the_request_applies_nothing(self):
        before = self.on("reset_before")
        with self.assertRaises(botocore.exceptions.ConnectionClosedError):
            self.db.put_item(TableName=self.table, Item=item("p", "r"))
        self.assertEqual(self.injected("reset_before", before), 1)
        self.assertFalse(self.landed("r"))

    def test_a_reset_after_the_request_loses_the_answer_of_a_write_that_landed(self):
        before = self.on("reset_after")
        with self.assertRaises(botocore.exceptions.ConnectionClosedError):
            self.db.put_item(TableName=self.table, Item=item("p", "a"))
        self.assertEqual(self.injected("reset_after", before), 1)
        self.assertTrue(self.landed("a"))

    def test_a_lost_answer_is_a_500_after_the_write_landed(self):
        before = self.on("lost_answer")
        with self.assertRaises(botocore.exceptions.ClientError) as failed:
            self.db.put_item(
                TableName=self.table, Item=item("p", "l"), ConditionExpression="attribute_not_exists(pk)"
            )
        self.assertEqual(failed.exception.response["ResponseMetadata"]["HTTPStatusCode"], 500)
        self.assertEqual(self.injected("lost_answer", before), 1)
        self.assertTrue(self.landed("l"))
        # The SDK's retry of that create meets its own landed write (what an adapter must expect).
        with self.assertRaises(botocore.exceptions.ClientError) as retried:
            self.db.put_item(
                TableName=self.table, Item=item("p", "l"), ConditionExpression="attribute_not_exists(pk)"
            )
        self.assertEqual(retried.exception.response["Error"]["Code"], "ConditionalCheckFailedException")

    def test_a_slow_answer_outlasts_the_clients_timeout(self):
        before = self.on("slow", slow_seconds=1.5)
        impatient = SERVER.client("dynamodb", read_timeout=0.5)
        with self.assertRaises(botocore.exceptions.ReadTimeoutError):
            impatient.put_item(TableName=self.table, Item=item("p", "s"))
        self.assertEqual(self.injected("slow", before), 1)
        # The request reaches moto when the delay is over, as a late write reaches DynamoDB.
        deadline = time.monotonic() + 10
        while not self.landed("s"):
            self.assertLess(time.monotonic(), deadline, "the slow write never landed")
            time.sleep(0.2)

    def test_sqs_messages_are_delivered_twice(self):
        self.sqs.send_message(QueueUrl=self.queue, MessageBody="once")
        before = self.on("sqs_duplicate")
        first = self.sqs.receive_message(QueueUrl=self.queue, VisibilityTimeout=600)["Messages"]
        SERVER.admin("/fault-api/off", {})
        again = self.sqs.receive_message(QueueUrl=self.queue, VisibilityTimeout=600)["Messages"]
        self.assertEqual([m["MessageId"] for m in again], [m["MessageId"] for m in first])
        self.assertEqual(self.injected("sqs_duplicate", before), 1)

    def test_a_delete_fails_after_succeeding_and_its_retry_succeeds(self):
        self.sqs.send_message(QueueUrl=self.queue, MessageBody="m")
        message = self.sqs.receive_message(QueueUrl=self.queue, VisibilityTimeout=0)["Messages"][0]
        before = self.on("delete_lost")
        with self.assertRaises(botocore.exceptions.ClientError) as failed:
            self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
        self.assertEqual(failed.exception.response["ResponseMetadata"]["HTTPStatusCode"], 500)
        self.assertEqual(self.injected("delete_lost", before), 1)
        SERVER.admin("/fault-api/off", {})
        # It was deleted: the retry succeeds and nothing is left to receive.
        self.sqs.delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])
        self.assertNotIn("Messages", self.sqs.receive_message(QueueUrl=self.queue))

    def test_the_sdks_retries_get_through_faults(self):
        before = SERVER.admin("/fault-api/state")
        SERVER.admin("/fault-api/on", {"rate": 0.3, "seed": 7, "kinds": ["throttle", "error500", "reset_before"]})
        patient = SERVER.client("dynamodb", retries=9)
        for i in range(30):
            patient.put_item(TableName=self.table, Item=item("p", f"r{i}"))
        after = SERVER.admin("/fault-api/state")
        injected = sum(after["faults"].values()) - sum(before["faults"].values())
        self.assertGreater(injected, 0)
        SERVER.admin("/fault-api/off", {})
        self.assertEqual(self.db.scan(TableName=self.table)["Count"], 30)


class FaultsFromTheEnvironment(unittest.TestCase):
    """A server started with A2A_FAULT_RATE: faults on from the start, never on moto's API."""

    def test_the_rate_and_seed_come_from_the_environment_and_moto_api_is_never_faulted(self):
        server = MotoServer({"A2A_FAULT_RATE": "1", "A2A_FAULT_SEED": "3", "A2A_FAULT_KINDS": "error500"})
        try:
            state = server.admin("/fault-api/state")
            self.assertEqual((state["on"], state["rate"], state["seed"]), (True, 1.0, 3))
            for _ in range(5):
                urllib.request.urlopen(f"{server.url}/moto-api/data.json", timeout=5).read()
            db = server.client("dynamodb")
            for _ in range(3):
                with self.assertRaises(botocore.exceptions.ClientError):
                    db.list_tables()
            state = server.admin("/fault-api/state")
            self.assertEqual(state["faults"]["error500"], 3)
            self.assertEqual(state["requests"], 3)
            server.admin("/fault-api/off", {})
            db.list_tables()
        finally:
            log = server.stop()
        self.assertEqual(log.count("fault error500 #"), 3, log)

    def test_a_bad_setting_is_refused(self):
        with self.assertRaises(urllib.error.HTTPError) as refused:
            SERVER.admin("/fault-api/on", {"kinds": ["meteor"]})
        self.assertEqual(refused.exception.code, 400)
        self.assertFalse(SERVER.admin("/fault-api/state")["on"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

#include "tachyon/chat.h"

#include <doctest/doctest.h>

#include "tests/runtime/sdk/sdk_fixture.h"

using namespace tachyon::sdk;

TEST_CASE("chat renders the conversation, generates the reply and streams it") {
    sdk_fixture::scripted_host s({"Hello there, operator."});
    model m = model_access::make(s.host);
    CHECK(m.chat_format() == "chatml");
    std::string streamed;
    int n_pieces = 0;
    chat_options o;
    o.on_text = [&](std::string_view piece) {
        streamed += piece;
        ++n_pieces;
        return true;
    };
    auto reply = m.chat({{"system", "Be brief."}, {"user", "Hi"}}, o);
    REQUIRE_MESSAGE(reply.ok(), reply.error().message);
    CHECK(reply->text == "Hello there, operator.");
    CHECK(streamed == reply->text);
    CHECK(n_pieces > 1);
    CHECK(reply->finish == "stop");
    CHECK(reply->prompt_tokens > 0);
    CHECK(reply->completion_tokens >= n_pieces);
    // The model read the ChatML rendering of the conversation.
    CHECK(s.transcript().find("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n") == 0);
}

TEST_CASE("chat stops at max_tokens or when the callback says so") {
    sdk_fixture::scripted_host s({"abcdefghijklmnop"});
    model m = model_access::make(s.host);
    chat_options o;
    o.max_tokens = 4;
    auto cut = m.chat({{"user", "letters"}}, o);
    REQUIRE(cut.ok());
    CHECK(cut->finish == "length");
    CHECK(cut->text == "abcd");

    sdk_fixture::scripted_host other({"abcdefghijklmnop"});
    chat_options stop;
    stop.on_text = [](std::string_view piece) { return piece != "e"; };
    auto stopped = model_access::make(other.host).chat({{"user", "letters"}}, stop);
    REQUIRE(stopped.ok());
    CHECK(stopped->finish == "stop");
    CHECK(stopped->text == "abcde");
}

TEST_CASE("chat errors name what is wrong") {
    sdk_fixture::scripted_host s({"x"});
    model m = model_access::make(s.host);
    CHECK(m.chat({}).error().message == "chat: no messages");
    chat_options o;
    o.max_tokens = 0;
    CHECK(m.chat({{"user", "hi"}}, o).error().message == "chat: max_tokens must be at least 1, got 0");
    o.max_tokens = 1 << 20;
    auto too_long = m.chat({{"user", "hi"}}, o);
    CHECK(too_long.error().code == errc::out_of_range);
    CHECK(too_long.error().message.find("exceed the context of 32768 positions") != std::string::npos);
    CHECK(m.chat({{"narrator", "hi"}}).error().message.find("chat: ") == 0);

    auto missing = model::open("/nonexistent/model.gguf");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("/nonexistent/model.gguf") != std::string::npos);
}

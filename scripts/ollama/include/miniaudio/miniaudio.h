/*
 * Stub of miniaudio.h for building the Ollama server from its Go module.
 *
 * The github.com/ollama/ollama module zip omits llama/llama.cpp/vendor/, where
 * the real single-header miniaudio library lives. The only user in the build
 * is llama.cpp's tools/mtmd/mtmd-helper.cpp, which decodes audio inputs for
 * multimodal models. infill serves text-only code models, so this stub
 * declares just the names mtmd-helper.cpp uses and makes every decode fail:
 * an audio input is rejected ("Unable to read WAV audio file from buffer")
 * instead of being decoded. Nothing else in Ollama depends on it.
 *
 * Part of infill (scripts/ollama/build.sh adds this directory to the include
 * path); not a copy of miniaudio.
 */
#ifndef INFILL_MINIAUDIO_STUB_H
#define INFILL_MINIAUDIO_STUB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;

typedef int ma_result;
#define MA_SUCCESS 0
#define MA_ERROR (-1)
#define MA_NOT_IMPLEMENTED (-29)

typedef enum {
    ma_format_unknown = 0,
    ma_format_u8 = 1,
    ma_format_s16 = 2,
    ma_format_s24 = 3,
    ma_format_s32 = 4,
    ma_format_f32 = 5
} ma_format;

typedef struct {
    ma_format format;
    ma_uint32 channels;
    ma_uint32 sampleRate;
} ma_decoder_config;

typedef struct {
    int unused;
} ma_decoder;

static inline ma_decoder_config ma_decoder_config_init(ma_format outputFormat, ma_uint32 outputChannels, ma_uint32 outputSampleRate) {
    ma_decoder_config c;
    c.format = outputFormat;
    c.channels = outputChannels;
    c.sampleRate = outputSampleRate;
    return c;
}

static inline ma_result ma_decoder_init_memory(const void *pData, size_t dataSize, const ma_decoder_config *pConfig, ma_decoder *pDecoder) {
    (void)pData;
    (void)dataSize;
    (void)pConfig;
    if (pDecoder != NULL) {
        pDecoder->unused = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *pDecoder, ma_uint64 *pLength) {
    (void)pDecoder;
    if (pLength != NULL) {
        *pLength = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *pDecoder, void *pFramesOut, ma_uint64 frameCount, ma_uint64 *pFramesRead) {
    (void)pDecoder;
    (void)pFramesOut;
    (void)frameCount;
    if (pFramesRead != NULL) {
        *pFramesRead = 0;
    }
    return MA_NOT_IMPLEMENTED;
}

static inline ma_result ma_decoder_uninit(ma_decoder *pDecoder) {
    (void)pDecoder;
    return MA_SUCCESS;
}

#ifdef __cplusplus
}
#endif

#endif /* INFILL_MINIAUDIO_STUB_H */
